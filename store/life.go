package store

import (
	"container/heap"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// An expiry is one file that is deleted when its lifetime ends. Each is
// persisted as a small file in <hist>/expire/ so restarts keep the promise.
type expiry struct {
	Rel      string    `json:"rel"`
	Ino      uint64    `json:"ino"`
	Deadline time.Time `json:"deadline"`
	vol      *Volume
	file     string // the record's path
}

type expiryHeap []*expiry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].Deadline.Before(h[j].Deadline) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(*expiry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// janitor deletes files whose lifetime ended.
type janitor struct {
	s    *Store
	kick chan struct{}
	quit chan struct{}
	wg   sync.WaitGroup

	sweeping atomic.Bool // a sweep of object-store volumes is running (objlife.go)

	mu struct {
		sync.Mutex
		h expiryHeap
		// objNext is the soonest deadline this node gave a file on
		// object storage since its last sweep (zero: none): the sweep
		// runs then too, not only every objSweepEvery.
		objNext time.Time
	}
}

func startJanitor(s *Store) *janitor {
	j := &janitor{s: s, kick: make(chan struct{}, 1), quit: make(chan struct{})}
	for _, v := range s.mounted() {
		j.load(v)
		if v.obj != nil {
			j.mu.objNext = s.now() // a first sweep at start: it learns the next deadline
		}
	}
	j.wg.Add(1)
	go j.run()
	return j
}

func (j *janitor) stop() {
	close(j.quit)
	j.wg.Wait()
}

func expireDir(v *Volume) string { return filepath.Join(v.hist, "expire") }

// load reads the volume's persisted expiries.
func (j *janitor) load(v *Volume) {
	if v.hist == "" {
		return
	}
	dir := expireDir(v)
	des, err := readStateDir(dir)
	if err != nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, de := range des {
		name := filepath.Join(dir, de.Name())
		b, err := readStateFile(name, 1<<20)
		if err != nil {
			continue
		}
		var e expiry
		if json.Unmarshal(b, &e) != nil || e.Rel == "" {
			j.s.log.Warn("dropping unreadable expiry record", "file", name)
			os.Remove(name)
			continue
		}
		e.vol, e.file = v, name
		heap.Push(&j.mu.h, &e)
	}
}

// scheduleExpiry records that rel (whose identity is fi) is to be deleted at
// deadline; the record is durable before this returns.
func (v *Volume) scheduleExpiry(rel string, fi fs.FileInfo, deadline time.Time) error {
	if v.outer != nil {
		return v.outer.scheduleExpiry(v.outerRel(rel), fi, deadline)
	}
	if v.hist == "" {
		return fmt.Errorf("volume %q has no state folder, so its lifetime cannot be kept", v.Src)
	}
	e := &expiry{Rel: relOf(rel), Deadline: deadline, vol: v}
	if _, ino, ok := FileID(fi); ok {
		e.Ino = ino
	}
	dir := expireDir(v)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	var b [6]byte
	rand.Read(b[:])
	e.file = filepath.Join(dir, fmt.Sprintf("%d-%s.json", deadline.UnixNano(), hex.EncodeToString(b[:])))
	data, _ := json.Marshal(e)
	if err := writeFileAtomic(e.file, data); err != nil {
		return err
	}
	j := v.store.janitor
	if j == nil {
		return nil
	}
	j.mu.Lock()
	heap.Push(&j.mu.h, e)
	j.mu.Unlock()
	select {
	case j.kick <- struct{}{}:
	default:
	}
	return nil
}

func (j *janitor) run() {
	defer j.wg.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	sweep := time.NewTicker(objSweepEvery) // volumes on object storage (objlife.go)
	defer sweep.Stop()
	// On its own goroutine: a slow or unreachable object store never
	// holds up the expiries on disk.
	sweepObjects := func() {
		if j.sweeping.CompareAndSwap(false, true) {
			j.wg.Add(1)
			go func() {
				defer j.wg.Done()
				defer j.sweeping.Store(false)
				j.s.sweepAllObjects(j, j.quit)
			}()
		}
	}
	for {
		next := j.expireDue()
		j.mu.Lock()
		if o := j.mu.objNext; !o.IsZero() {
			if w := o.Sub(j.s.now()); w > 0 {
				next = min(next, w)
			} else if !j.sweeping.Load() {
				j.mu.objNext = time.Time{}
				j.mu.Unlock()
				sweepObjects()
				continue
			} else {
				next = min(next, time.Second) // after the sweep under way
			}
		}
		j.mu.Unlock()
		t.Reset(next)
		select {
		case <-j.quit:
			return
		case <-j.kick:
		case <-t.C:
		case <-sweep.C:
			sweepObjects()
		}
	}
}

// objDeadline tells the janitor that a file on object storage expires at
// deadline, so the sweep runs then rather than up to objSweepEvery later.
func (j *janitor) objDeadline(deadline time.Time) {
	j.mu.Lock()
	if o := j.mu.objNext; o.IsZero() || deadline.Before(o) {
		j.mu.objNext = deadline
	}
	j.mu.Unlock()
	select {
	case j.kick <- struct{}{}:
	default:
	}
}

// expireDue deletes every file whose deadline passed and returns how long
// to wait for the next one.
func (j *janitor) expireDue() time.Duration {
	for {
		j.mu.Lock()
		if len(j.mu.h) == 0 {
			j.mu.Unlock()
			return time.Hour
		}
		e := j.mu.h[0]
		if wait := e.Deadline.Sub(j.s.now()); wait > 0 {
			j.mu.Unlock()
			return min(wait, time.Hour)
		}
		heap.Pop(&j.mu.h)
		j.mu.Unlock()
		j.expire(e)
	}
}

// expire deletes the file if it is still the one that was uploaded (same
// inode), then drops the record.
func (j *janitor) expire(e *expiry) {
	v := e.vol
	after, err := j.s.settle(v) // no replay may bring it back (gcommit.go)
	if err != nil {
		j.s.log.Warn("lifetime ended but the file cannot be deleted yet", "volume", "/"+v.VPath, "path", e.Rel, "err", err)
		return
	}
	defer func() {
		if err := after(); err != nil {
			j.s.log.Warn("an expired file's deletion may not survive a crash", "volume", "/"+v.VPath, "path", e.Rel, "err", err)
		}
	}()
	fi, err := v.root.Lstat(e.Rel)
	if err == nil {
		_, ino, ok := FileID(fi)
		if !fi.IsDir() && (!ok || e.Ino == 0 || ino == e.Ino) {
			ev := Event{Kind: Removed, Vol: v, Rel: e.Rel, At: j.s.now()}
			ev.Note, _ = j.s.note(ev) // so that a crash cannot leave it in the index
			if err := v.root.Remove(e.Rel); err != nil {
				j.s.forget(v, ev.Note)
				j.s.log.Warn("lifetime ended but the file could not be deleted", "volume", "/"+v.VPath, "path", e.Rel, "err", err)
				return // keep the record; retried at next start
			}
			j.s.log.Info("lifetime ended; deleted", "volume", "/"+v.VPath, "path", e.Rel)
			j.s.emit(ev)
		}
	}
	os.Remove(e.file)
}
