package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A state folder whose file system is (nearly) full cannot take the
// index records and upload sessions that writes need. hoard then goes on
// serving reads and refuses the writes that need the state, with a
// StateFullError, until space is freed; it never lets the database run
// into ENOSPC (which Pebble treats as fatal) when it can help it.

// StateFullError is a write refused because the state folder's file
// system has less room than hoard keeps free there.
type StateFullError struct {
	Free uint64 // bytes free in the state folder's file system
	Keep uint64 // bytes kept free there
	// Opening: there is room again, and the index is being opened; the
	// client should try again in a moment.
	Opening bool
}

func (e *StateFullError) Error() string {
	if e.Opening {
		return "the server's state folder (index and upload sessions) is being opened again after it was full; try again in a few seconds"
	}
	return fmt.Sprintf("the server's state folder (index and upload sessions) is full: %s free, %s must stay free; writes that need it are refused until space is freed there", HumanSize(int64(e.Free)), HumanSize(int64(e.Keep)))
}

// Class is KindUnavailable while the index is being opened again, else
// KindStateFull.
func (e *StateFullError) Class() (Kind, string) {
	if e.Opening {
		return KindUnavailable, e.Error()
	}
	return KindStateFull, e.Error()
}

// StateRoom returns the free bytes of the file system holding the state
// folder dir and how many of them hoard keeps free: 1/32 of its size,
// 256 KiB to 64 MiB (room for the database's write-ahead log and a flush).
func StateRoom(dir string) (free, keep uint64, err error) {
	now := time.Now()
	if c, ok := roomCache.Load(dir); ok {
		if r := c.(roomSeen); now.Sub(r.at) < roomFresh && r.free >= r.keep+roomMargin {
			return r.free, r.keep, nil
		}
	}
	free, keep, err = stateRoom(dir)
	if err == nil {
		roomCache.Store(dir, roomSeen{at: now, free: free, keep: keep})
	}
	return free, keep, err
}

// Every upload asks StateRoom several times (the upload's check, the
// index's note, the index's record); one statfs answers them all while
// the answer is fresh and far from the limit: roomMargin more than is
// kept free cannot be written in roomFresh. Near the limit, every call
// asks the file system.
const (
	roomFresh  = 10 * time.Millisecond
	roomMargin = 256 << 20
)

// roomSeen is a state folder's free space as last read.
type roomSeen struct {
	at         time.Time
	free, keep uint64
}

var roomCache sync.Map // state folder → roomSeen

func stateRoom(dir string) (free, keep uint64, err error) {
	for {
		free, total, err := statfs(dir) // statfs.go: the fields' types differ by system
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, 0, err
		}
		return free, min(max(total/32, 256<<10), 64<<20), nil
	}
}

// CheckStateRoom returns a *StateFullError when the state folder dir has
// less than need bytes more than it keeps free; nil otherwise (also when
// its space cannot be read).
func CheckStateRoom(dir string, need uint64) error {
	free, keep, err := StateRoom(dir)
	if err != nil || free >= keep+need {
		return nil
	}
	return &StateFullError{Free: free, Keep: keep}
}

// RateLog logs at most once per interval (per RateLog value), counting
// what it left out.
type RateLog struct {
	Every   time.Duration
	last    atomic.Int64
	skipped atomic.Int64
}

// Log logs msg at level through l unless it did so less than Every ago.
func (r *RateLog) Log(l *slog.Logger, level slog.Level, msg string, args ...any) {
	now := time.Now().UnixNano()
	last := r.last.Load()
	if last != 0 && now-last < int64(r.Every) || !r.last.CompareAndSwap(last, now) {
		r.skipped.Add(1)
		return
	}
	if n := r.skipped.Swap(0); n > 0 {
		args = append(args, "repeated", n)
	}
	l.Log(context.Background(), level, msg, args...)
}

// stateLog rate-limits the warning about a volume's full state folder.
var stateLog = RateLog{Every: time.Minute}

// checkState refuses a write into v that needs its state folder (an
// index record with e2d, an expiry record with lifetime) while that
// folder's file system is full.
func (v *Volume) checkState() error {
	if v.hist == "" || !v.Flags().E2D && v.Flags().Lifetime == 0 {
		return nil
	}
	err := CheckStateRoom(v.hist, 0)
	if err != nil {
		stateLog.Log(v.store.log, slog.LevelWarn, "the state folder is full; refusing uploads that need it until space is freed", "volume", "/"+v.VPath, "err", err)
	}
	return err
}

// stateErr makes a write to the state folder dir that met a full disk a
// *StateFullError (wrapping err); other errors are returned as they are.
func stateErr(err error, dir string) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		free, keep, _ := StateRoom(dir)
		return fmt.Errorf("%w (%v)", &StateFullError{Free: free, Keep: keep}, err)
	}
	return err
}
