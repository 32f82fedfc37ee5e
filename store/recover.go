package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// This file is what keeps a crash from leaving debris: the state folder's
// run lock (which tells a clean stop from a crash), the log that lets a
// cut-off append be cut back at start, and the sweep of work files that a
// crash left behind.

// runName is the file in a state folder that the running process holds
// locked (flock) and that says whether the last run stopped cleanly.
const runName = "run"

const (
	runRunning = "running\n"
	runStopped = "stopped\n"
)

// histRun is one state folder's run lock.
type histRun struct {
	f       *os.File
	unclean bool // the previous run did not stop cleanly, and its leftovers are not swept yet
	sweeps  int  // sweeps of its volumes still to finish
}

// claimHist takes the run lock of v's state folder (shared by volumes with
// the same folder). Without it (another process holds it, or the folder
// cannot be written) the volume gets no crash recovery: nothing at start
// may touch files that another process may be writing.
func (s *Store) claimHist(v *Volume) {
	if v.hist == "" {
		return
	}
	if r, ok := s.runs[v.hist]; ok {
		v.run = r
		return
	}
	s.runs[v.hist] = nil
	f, err := os.OpenFile(filepath.Join(v.hist, runName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		s.log.Warn("cannot open the state folder's run file; crash recovery is off for this volume", "volume", "/"+v.VPath, "err", err)
		return
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		s.log.Warn("another process uses this volume's state folder; start-up crash recovery is skipped for it", "volume", "/"+v.VPath, "hist", v.hist, "err", err)
		return
	}
	b, _ := io.ReadAll(io.LimitReader(f, 64))
	r := &histRun{f: f, unclean: len(b) > 0 && string(b) != runStopped}
	if err := writeRun(f, runRunning); err != nil {
		s.log.Warn("cannot write the state folder's run file", "volume", "/"+v.VPath, "err", err)
	}
	s.runs[v.hist] = r
	v.run = r
}

func writeRun(f *os.File, state string) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt([]byte(state), 0); err != nil {
		return err
	}
	return f.Sync()
}

// releaseHists records a clean stop in every state folder and unlocks it.
func (s *Store) releaseHists() {
	for _, r := range s.runs {
		if r == nil {
			continue
		}
		if !r.unclean {
			writeRun(r.f, runStopped)
		}
		r.f.Close()
	}
	clear(s.runs)
}

// ---- temp files -------------------------------------------------------------

// newTempName is a fresh name for a PUT or multipart work file.
func newTempName() string {
	var b [9]byte
	rand.Read(b[:])
	return tempPrefix + base64.RawURLEncoding.EncodeToString(b[:]) + PartialSuffix
}

// isTempName reports whether name is one newTempName makes.
func isTempName(name string) bool {
	mid, ok := strings.CutPrefix(name, tempPrefix)
	if !ok {
		return false
	}
	mid, ok = strings.CutSuffix(mid, PartialSuffix)
	if !ok || len(mid) != 12 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(mid)
	return err == nil
}

// tempLive registers (on) or unregisters the work file rel of v as being
// written by this process, so that no sweep takes it for debris. It is
// keyed by the file's absolute path, so a view of a folder (Confine)
// and its volume agree.
func (s *Store) tempLive(v *Volume, rel string, on bool) {
	k := filepath.Join(v.Src, filepath.FromSlash(rel))
	s.crashMu.Lock()
	if on {
		s.temps[k]++
	} else if s.temps[k] > 1 {
		s.temps[k]--
	} else {
		delete(s.temps, k)
	}
	s.crashMu.Unlock()
}

// removeUnlessLive removes the work file rel of v unless this process is
// writing it.
func (s *Store) removeUnlessLive(v *Volume, rel string) bool {
	k := filepath.Join(v.Src, filepath.FromSlash(rel))
	s.crashMu.Lock()
	defer s.crashMu.Unlock()
	if s.temps[k] > 0 {
		return false
	}
	return v.root.Remove(rel) == nil
}

// ---- appends ----------------------------------------------------------------

// fileID is a file's identity.
type fileID struct{ dev, ino uint64 }

func idOf(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), st.Ino}, true
}

type fileLock struct {
	mu sync.Mutex
	n  int
}

// lockFile serialises appends to one file (whatever name or view they
// come through): two at once would interleave their bytes, and cutting
// one back would cut the other.
func (s *Store) lockFile(id fileID) (unlock func()) {
	s.crashMu.Lock()
	l := s.flocks[id]
	if l == nil {
		l = &fileLock{}
		s.flocks[id] = l
	}
	l.n++
	s.crashMu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		s.crashMu.Lock()
		if l.n--; l.n == 0 {
			delete(s.flocks, id)
		}
		s.crashMu.Unlock()
	}
}

// appendLog is a volume's record of appends in progress, in its state
// folder: before an append writes a byte, a line naming the file and its
// old length is made durable; once the append is durable, a second line
// closes it. At start, every append left open is cut back to its old
// length (the client was never told it had worked).
//
// Each line is "<crc32 of the rest, 8 hex> <record>\n", the record being
// "B <id> <dev> <ino> <old size> <quoted path>" or "E <id>"; a torn or
// damaged line is ignored (its append never started, or never ended).
type appendLog struct {
	path      string
	recovered bool // its leftovers were cut back at Open
	mu        sync.Mutex
	f         *os.File
	next      uint64
	inflight  int
	size      int64
}

// appendLogFor returns the log of v's state folder, "apnd-<hash of the
// volume's folder>.log" (volumes may share a state folder).
func (s *Store) appendLogFor(v *Volume) *appendLog {
	if v.run == nil {
		return nil
	}
	sum := sha256.Sum256([]byte(v.Src))
	p := filepath.Join(v.hist, "apnd-"+hex.EncodeToString(sum[:6])+".log")
	s.alogMu.Lock() // a reload adds logs while requests look theirs up
	defer s.alogMu.Unlock()
	if l := s.alogs[p]; l != nil {
		return l
	}
	l := &appendLog{path: p}
	s.alogs[p] = l
	return l
}

// appendRec is one append in the log.
type appendRec struct {
	id       uint64
	dev, ino uint64
	old      int64
	rel      string
}

func (r appendRec) line() string {
	return fmt.Sprintf("B %d %d %d %d %s", r.id, r.dev, r.ino, r.old, strconv.Quote(r.rel))
}

func sealLine(rec string) []byte {
	return fmt.Appendf(nil, "%08x %s\n", crc32.ChecksumIEEE([]byte(rec)), rec)
}

// parseAppendLog returns the appends the log leaves open, in log order.
func parseAppendLog(data []byte) []appendRec {
	var open []appendRec
	idx := map[uint64]int{}
	for line := range bytes.Lines(data) {
		if !bytes.HasSuffix(line, []byte("\n")) {
			break // torn last line
		}
		line = line[:len(line)-1]
		sum, rec, ok := bytes.Cut(line, []byte(" "))
		if !ok || len(sum) != 8 {
			continue
		}
		want, err := strconv.ParseUint(string(sum), 16, 32)
		if err != nil || uint32(want) != crc32.ChecksumIEEE(rec) {
			continue
		}
		f := strings.SplitN(string(rec), " ", 6)
		switch {
		case len(f) == 6 && f[0] == "B":
			var r appendRec
			var e [4]error
			r.id, e[0] = strconv.ParseUint(f[1], 10, 64)
			r.dev, e[1] = strconv.ParseUint(f[2], 10, 64)
			r.ino, e[2] = strconv.ParseUint(f[3], 10, 64)
			r.old, e[3] = strconv.ParseInt(f[4], 10, 64)
			rel, err := strconv.Unquote(f[5])
			if errors.Join(e[:]...) != nil || err != nil || r.old < 0 {
				continue
			}
			r.rel = rel
			if _, dup := idx[r.id]; dup {
				continue
			}
			idx[r.id] = len(open)
			open = append(open, r)
		case len(f) == 2 && f[0] == "E":
			id, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				continue
			}
			if i, ok := idx[id]; ok {
				open[i].id = 0 // closed
			}
		}
	}
	out := open[:0]
	for _, r := range open {
		if r.id != 0 {
			out = append(out, r)
		}
	}
	return out
}

// write appends one record and makes it durable.
func (l *appendLog) write(rec string) error {
	line := sealLine(rec)
	l.mu.Lock()
	if l.f == nil {
		f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			l.mu.Unlock()
			return err
		}
		if err := syncDir(filepath.Dir(l.path)); err != nil {
			f.Close()
			l.mu.Unlock()
			return err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			l.mu.Unlock()
			return err
		}
		l.f, l.size = f, fi.Size()
	}
	f := l.f
	_, err := f.Write(line)
	l.size += int64(len(line))
	l.mu.Unlock()
	if err != nil {
		return err
	}
	return Datasync(f)
}

// logCompactAt is the size beyond which the log is emptied once no append
// is in progress.
const logCompactAt = 256 << 10

// begin records an append to the file rel (path inside the log's volume)
// whose identity is id and length old, durably, before it starts.
func (l *appendLog) begin(rel string, id fileID, old int64) (uint64, error) {
	l.mu.Lock()
	l.next++
	n := l.next
	l.inflight++
	l.mu.Unlock()
	err := l.write(appendRec{id: n, dev: id.dev, ino: id.ino, old: old, rel: rel}.line())
	if err != nil {
		l.done()
	}
	return n, err
}

// end records, durably, that append n is complete (or was cut back). A
// nil log has nothing to record.
func (l *appendLog) end(n uint64) error {
	if l == nil {
		return nil
	}
	err := l.write("E " + strconv.FormatUint(n, 10))
	l.done()
	return err
}

// done ends an append; with none left, a long log is emptied.
func (l *appendLog) done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inflight--; l.inflight > 0 || l.size < logCompactAt || l.f == nil {
		return
	}
	if l.f.Truncate(0) == nil && l.f.Sync() == nil {
		l.size = 0
	}
}

// close closes the log file.
func (l *appendLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// recoverAppends cuts back the appends that a crash left open in v's log
// and empties it.
func (s *Store) recoverAppends(v *Volume, l *appendLog) {
	data, err := os.ReadFile(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		s.log.Error("cannot read the log of appends in progress; appends cut off by a crash are not cut back", "volume", "/"+v.VPath, "err", err)
		return
	}
	for _, r := range parseAppendLog(data) {
		s.cutBack(v, r)
	}
	if len(data) > 0 {
		if err := os.Truncate(l.path, 0); err == nil {
			if f, err := os.Open(l.path); err == nil {
				f.Sync()
				f.Close()
			}
		}
	}
}

// cutBack restores a file to its length before an append that never
// completed, if it is still the same file.
func (s *Store) cutBack(v *Volume, r appendRec) {
	rel, err := cleanRel(r.rel)
	if err != nil {
		return
	}
	f, err := v.root.OpenFile(rel, os.O_WRONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return // gone, or not a plain file: nothing to cut
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	if id, ok := idOf(fi); !ok || id != (fileID{r.dev, r.ino}) || fi.Size() <= r.old {
		return
	}
	if err := f.Truncate(r.old); err != nil {
		s.log.Error("cannot cut back an append that a crash cut off", "volume", "/"+v.VPath, "path", rel, "err", err)
		return
	}
	if err := f.Sync(); err != nil {
		s.log.Error("cannot cut back an append that a crash cut off", "volume", "/"+v.VPath, "path", rel, "err", err)
		return
	}
	s.log.Info("cut back an append that a crash cut off before it was acknowledged", "volume", "/"+v.VPath, "path", rel, "size", r.old, "was", fi.Size())
}

// base returns the mounted volume that v is (or is a view into, see
// Confine) and v's folder inside it ("." for a mounted volume).
func (s *Store) base(v *Volume) (*Volume, string) {
	o, at := v.Outer()
	if at == "" {
		at = "."
	}
	return o, at
}

// ---- the sweep ------------------------------------------------------------

// SweepLeftovers removes, in the background, what a crash of the previous
// run left in the volumes that did not stop cleanly: work files of PUT and
// multipart uploads (.hoard-*.PARTIAL) that this process is not writing,
// and up2k work files (marked as such when made) that no session owns
// (owned reports the sessions' work files by folder and final name) and
// that are older than this start. It walks each such volume once, through
// its os.Root, never following links and never entering the state folder.
// Call it once up2k has loaded its sessions; Close stops it.
func (s *Store) SweepLeftovers(owned func(v *Volume, dir, name string) bool) {
	s.SweepLeftoversOf(s.mounted(), owned)
}

// SweepLeftoversOf is SweepLeftovers for some volumes only (those a
// reload added, once up2k has loaded their sessions).
func (s *Store) SweepLeftoversOf(vols []*Volume, owned func(v *Volume, dir, name string) bool) {
	seen := map[string]bool{}
	var todo []*Volume
	s.crashMu.Lock()
	for _, v := range vols {
		if v.run == nil || !v.run.unclean || seen[v.Src] {
			continue
		}
		seen[v.Src] = true
		v.run.sweeps++
		todo = append(todo, v)
	}
	s.crashMu.Unlock()
	for _, v := range todo {
		s.sweeps.Add(1)
		go func() {
			defer s.sweeps.Done()
			if s.sweep(s.sweepCtx, v, owned) {
				s.crashMu.Lock()
				if v.run.sweeps--; v.run.sweeps == 0 {
					v.run.unclean = false // Close may record a clean stop
				}
				s.crashMu.Unlock()
			}
		}()
	}
}

// WaitSweeps waits for the sweeps started by SweepLeftovers (tests).
func (s *Store) WaitSweeps() { s.sweeps.Wait() }

// sweep walks v; it reports whether it got through.
func (s *Store) sweep(ctx context.Context, v *Volume, owned func(v *Volume, dir, name string) bool) bool {
	t0 := time.Now()
	var temps, works, kept int
	// Volumes mounted inside this one are theirs to sweep (under their
	// own run lock).
	inner := map[string]bool{}
	for _, w := range s.mounted() {
		if w.Src != v.Src {
			inner[w.Src] = true
		}
	}
	dirs := []string{"."}
	for len(dirs) > 0 && ctx.Err() == nil {
		dir := dirs[len(dirs)-1]
		dirs = dirs[:len(dirs)-1]
		d, err := v.root.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			continue
		}
		for ctx.Err() == nil {
			des, err := d.ReadDir(1024)
			for _, de := range des {
				name := de.Name()
				rel := path.Join(dir, name)
				switch {
				case de.IsDir():
					if !strings.EqualFold(name, HistName) && !inner[filepath.Join(v.Src, filepath.FromSlash(rel))] {
						dirs = append(dirs, rel)
					}
				case !de.Type().IsRegular() || !strings.HasSuffix(name, PartialSuffix):
				case isTempName(name):
					if s.removeUnlessLive(v, rel) {
						temps++
					}
				default:
					switch s.sweepWork(v, dir, name, owned) {
					case 1:
						works++
					case -1:
						kept++
					}
				}
			}
			if err != nil || len(des) == 0 {
				break
			}
		}
		d.Close()
	}
	if ctx.Err() != nil {
		return false
	}
	s.log.Info("swept the leftovers of a crash", "volume", "/"+v.VPath, "work files", temps, "unfinished uploads", works, "unmarked kept", kept, "took", time.Since(t0).Round(time.Millisecond))
	return true
}

// sweepWork removes the up2k work file name in dir when no session owns
// it, it is older than this start and it bears the mark: 1 when removed,
// -1 when kept for lack of the mark, 0 otherwise.
func (s *Store) sweepWork(v *Volume, dir, name string, owned func(v *Volume, dir, name string) bool) int {
	final := strings.TrimSuffix(name, PartialSuffix)
	if final == "" || (owned != nil && owned(v, dir, final)) {
		return 0
	}
	rel := path.Join(dir, name)
	f, err := v.root.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0
	}
	fi, err := f.Stat()
	var buf [8]byte
	_, xerr := unix.Fgetxattr(int(f.Fd()), partialMark, buf[:])
	f.Close()
	if err != nil || !fi.Mode().IsRegular() || !fi.ModTime().Before(s.started) {
		return 0
	}
	if xerr != nil {
		s.log.Warn("a file named like an unfinished upload has no session; it is not hoard's (or its mark was lost), so it stays", "volume", "/"+v.VPath, "path", rel)
		return -1
	}
	if owned != nil && owned(v, dir, final) {
		return 0 // taken up meanwhile
	}
	if err := v.root.Remove(rel); err != nil {
		return 0
	}
	s.log.Info("removed the work file of an upload that a crash left without its session", "volume", "/"+v.VPath, "path", rel, "size", fi.Size())
	return 1
}
