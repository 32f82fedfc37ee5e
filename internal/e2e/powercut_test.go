//go:build linux

package e2e

// TestPowerCut cuts the power under hoard, round after round, while many
// small PUTs, replaces, deletes and up2k uploads (small ones of one
// chunk and a few of several chunks) run at once, and checks after every
// restart that:
//   - every acknowledged upload is there byte for byte (unless a later
//     acknowledged replace or delete changed it);
//   - no acknowledged delete is undone: the file does not come back;
//   - an operation in flight at the cut left its file as it was before
//     or as it would be after, never a torn or empty file;
//   - a re-handshake never asks for an acknowledged up2k chunk, and an
//     up2k upload whose last chunk was thanked is complete.
//
// SIGKILL alone cannot test durability: the kernel keeps the killed
// process's unflushed writes in its page cache and writes them later. So
// the volume (and its state folder) lives on an ext4 file system in a
// loop-mounted image, and the "power cut" is ext4's shutdown ioctl with
// EXT4_GOING_FLAGS_NOLOGFLUSH (xfstests' godown): the file system stops
// at once, its journal is not committed and its dirty pages are never
// written, as at a power loss. Then hoard is SIGKILLed, the image is
// unmounted and mounted again (journal recovery), and hoard is started
// on it. What this does not model: a disk's volatile write cache losing
// blocks that the kernel had written but not flushed (a loop device's
// writes land in the host's page cache). It needs root (mount) and
// mkfs.ext4; without them it is skipped.
//
// Rounds: HOARD_POWERCUT_ROUNDS (3 with -short, 12 otherwise; the long
// tier runs 200: bench/powercut.sh); HOARD_POWERCUT_SEED repeats a run.

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fsIOCShutdown is FS_IOC_SHUTDOWN (_IOR('X', 125, __u32)); its argument
// 2 is EXT4_GOING_FLAGS_NOLOGFLUSH: stop without flushing data or journal.
const (
	fsIOCShutdown  = 0x8004587d
	shutdownNoLog  = 2
	pcSmallMax     = 300 << 10 // some uploads just above the 256 KiB group-commit limit
	pcMultiChunkSz = 3 << 20
)

// pcState is a file's content as the model knows it.
type pcState struct {
	present bool
	sum     [32]byte
	size    int
}

func (s pcState) String() string {
	if !s.present {
		return "absent"
	}
	return fmt.Sprintf("%d bytes %x", s.size, s.sum[:4])
}

// pcFile is one name in the volume: its acknowledged state and the
// outcome of the operation in flight on it, if any.
type pcFile struct {
	acked    pcState
	inflight *pcState
	busy     bool // an operation runs on it now
}

// pcUp is one up2k upload.
type pcUp struct {
	name  string
	f     *up2kFile
	wark  string
	known bool // its handshake was answered
	acked map[int]bool
	done  bool
}

type powerCut struct {
	t     *testing.T
	mnt   string
	rng   *mrand.Rand
	mu    sync.Mutex
	files map[string]*pcFile // by name in the volume's top folder
	ups   []*pcUp
	// counters for the report
	puts, replaces, deletes, chunks, upsDone, inflightSeen int
	// the start-up replay of the group-commit journal (store/gcommit.go):
	// entries found, and files a cut had lost that it wrote again
	replayed, rewritten int
}

func TestPowerCut(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount an ext4 image")
	}
	rounds := 12
	if testing.Short() {
		rounds = 3
	}
	if v := os.Getenv("HOARD_POWERCUT_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("HOARD_POWERCUT_ROUNDS=%q", v)
		}
		rounds = n
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("HOARD_POWERCUT_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("%d rounds, HOARD_POWERCUT_SEED=%d", rounds, seed)

	img := filepath.Join(t.TempDir(), "vol.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 768<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		t.Skipf("mkfs.ext4: %v: %s", err, out)
	}
	mnt := t.TempDir()
	mounted := false
	mount := func() {
		t.Helper()
		if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
			if !mounted {
				t.Skipf("cannot loop-mount an ext4 image: %v: %s", err, out)
			}
			t.Fatalf("mount: %v: %s", err, out)
		}
		mounted = true
	}
	umount := func() {
		t.Helper()
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Fatalf("umount: %v: %s", err, out)
		}
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	mount()
	vol := filepath.Join(mnt, "v")
	if err := os.Mkdir(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	unix.Sync() // the empty volume is there from the start
	args := []string{"-v", vol + "::rwd", "-e2d"}
	m := &powerCut{t: t, mnt: vol, rng: mrand.New(mrand.NewPCG(seed, 11)), files: map[string]*pcFile{}}
	t0 := time.Now()
	for r := range rounds {
		if r > 0 {
			mount()
		}
		s := start(t, args...)
		m.countReplay(s)
		m.verify(s, r)
		m.load(s, r)
		umount()
	}
	mount()
	s := start(t, args...)
	m.verify(s, rounds)
	m.countReplay(s)
	t.Logf("%d power cuts in %v; acknowledged: %d small PUTs, %d replaces, %d deletes, %d up2k chunks, %d up2k uploads; %d operations were in flight at a cut; the group-commit replay found %d entries and wrote %d lost files again; all verified after every restart",
		rounds, time.Since(t0).Round(time.Second), m.puts, m.replaces, m.deletes, m.chunks, m.upsDone, m.inflightSeen, m.replayed, m.rewritten)
}

var replayLine = regexp.MustCompile(`replayed the group-commit journal.* entries=(\d+) written_again=(\d+)`)

// countReplay adds up what the start-up replay of s did.
func (m *powerCut) countReplay(s *server) {
	for _, sm := range replayLine.FindAllStringSubmatch(s.logs.String(), -1) {
		a, _ := strconv.Atoi(sm[1])
		b, _ := strconv.Atoi(sm[2])
		m.replayed += a
		m.rewritten += b
	}
}

var pcClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}

// load runs the workers, cuts the power at a random moment and kills
// hoard.
func (m *powerCut) load(s *server, round int) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	seeds := func() *mrand.Rand { return mrand.New(mrand.NewPCG(m.rng.Uint64(), m.rng.Uint64())) }
	for w := range 6 {
		rng := seeds()
		wg.Go(func() { m.putWorker(s, round, w, rng, stop) })
	}
	for range 2 {
		rng := seeds()
		wg.Go(func() { m.mutateWorker(s, rng, stop) })
	}
	for w := range 3 {
		rng := seeds()
		wg.Go(func() { m.up2kWorker(s, round, w, rng, stop) })
	}
	time.Sleep(time.Duration(50+m.rng.IntN(900)) * time.Millisecond)
	m.cutPower()
	s.kill(m.t)
	close(stop)
	wg.Wait()
}

// cutPower stops the file system as a power loss would.
func (m *powerCut) cutPower() {
	fd, err := unix.Open(m.mnt, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		m.t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.IoctlSetPointerInt(fd, fsIOCShutdown, shutdownNoLog); err != nil {
		m.t.Fatalf("FS_IOC_SHUTDOWN: %v", err)
	}
}

func pcStopped(stop chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// do sends a request; ok is false when there was no 2xx answer (the
// server is gone or the file system is: the operation's outcome is
// unknown).
func pcDo(method, url string, body []byte, hdr ...string) (code int, rb []byte, ok bool) {
	req, _ := http.NewRequest(method, url, bytes.NewReader(body))
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := pcClient.Do(req)
	if err != nil {
		return 0, nil, false
	}
	defer resp.Body.Close()
	rb, _ = io.ReadAll(resp.Body)
	return resp.StatusCode, rb, resp.StatusCode >= 200 && resp.StatusCode < 300
}

func stateOf(data []byte) pcState {
	return pcState{present: true, sum: sha256.Sum256(data), size: len(data)}
}

// putWorker PUTs new small files.
func (m *powerCut) putWorker(s *server, round, w int, rng *mrand.Rand, stop chan struct{}) {
	for i := 0; !pcStopped(stop); i++ {
		name := fmt.Sprintf("put-r%03d-w%d-%d.bin", round, w, i)
		data := randomBytes(1 + rng.IntN(pcSmallMax))
		after := stateOf(data)
		f := &pcFile{inflight: &after, busy: true}
		m.mu.Lock()
		m.files[name] = f
		m.mu.Unlock()
		_, _, ok := pcDo("PUT", s.URL+"/"+name, data)
		m.mu.Lock()
		f.busy = false
		if ok {
			f.acked, f.inflight = after, nil
			m.puts++
		}
		m.mu.Unlock()
		if !ok {
			return // the power is cut: its outcome is left to verify
		}
	}
}

// mutateWorker replaces or deletes files whose last operation was
// acknowledged.
func (m *powerCut) mutateWorker(s *server, rng *mrand.Rand, stop chan struct{}) {
	for !pcStopped(stop) {
		m.mu.Lock()
		var pick string
		var f *pcFile
		n := 0
		for name, c := range m.files { // a random idle, present file
			if !c.busy && c.inflight == nil && c.acked.present {
				n++
				if rng.IntN(n) == 0 {
					pick, f = name, c
				}
			}
		}
		if f == nil {
			m.mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			continue
		}
		del := rng.IntN(2) == 0
		var after pcState
		var data []byte
		if !del {
			data = randomBytes(1 + rng.IntN(pcSmallMax))
			after = stateOf(data)
		}
		f.busy, f.inflight = true, &after
		m.mu.Unlock()
		var ok bool
		if del {
			_, _, ok = pcDo("POST", s.URL+"/"+pick+"?delete", nil)
		} else {
			_, _, ok = pcDo("PUT", s.URL+"/"+pick+"?replace", data)
		}
		m.mu.Lock()
		f.busy = false
		if ok {
			f.acked, f.inflight = after, nil
			if del {
				m.deletes++
			} else {
				m.replaces++
			}
		}
		m.mu.Unlock()
		if !ok {
			return
		}
	}
}

func (m *powerCut) handshake(s *server, u *pcUp) (handshakeReply, bool) {
	rep, _, _, ok := m.handshakeWhy(s, u)
	return rep, ok
}

// handshakeWhy is handshake with the status and body of the answer.
func (m *powerCut) handshakeWhy(s *server, u *pcUp) (handshakeReply, int, []byte, bool) {
	b, _ := json.Marshal(map[string]any{"name": u.name, "size": len(u.f.data), "lmod": 1600000000, "hash": u.f.hashes})
	code, rb, ok := pcDo("POST", s.URL+"/", b, "Content-Type: application/json")
	var rep handshakeReply
	if !ok || json.Unmarshal(rb, &rep) != nil {
		return rep, code, rb, false
	}
	return rep, code, rb, true
}

// up2kWorker uploads small files (one chunk) by up2k, and now and then
// one of several chunks.
func (m *powerCut) up2kWorker(s *server, round, w int, rng *mrand.Rand, stop chan struct{}) {
	for i := 0; !pcStopped(stop); i++ {
		size := 1 + rng.IntN(pcSmallMax)
		if rng.IntN(8) == 0 {
			size = pcMultiChunkSz + rng.IntN(1<<20)
		}
		u := &pcUp{name: fmt.Sprintf("up-r%03d-w%d-%d.bin", round, w, i), f: newUp2kFile(randomBytes(size)), acked: map[int]bool{}}
		m.mu.Lock()
		m.ups = append(m.ups, u)
		m.mu.Unlock()
		rep, ok := m.handshake(s, u)
		if !ok {
			return
		}
		m.mu.Lock()
		u.known, u.wark = true, rep.Wark
		m.mu.Unlock()
		if rep.Name != u.name {
			m.t.Errorf("up2k %s was given the name %q", u.name, rep.Name)
			return
		}
		for _, h := range rep.Hash {
			code, body := postChunksNoFail(s, rep.Purl, rep.Wark, h, u.f.chunk(u.f.index(h)))
			if code != 200 || string(body) != "thank" {
				return // the power is cut
			}
			m.mu.Lock()
			for j, hj := range u.f.hashes {
				if hj == h {
					u.acked[j] = true
				}
			}
			m.chunks++
			m.mu.Unlock()
		}
		m.mu.Lock()
		u.done = true
		m.upsDone++
		m.files[u.name] = &pcFile{acked: stateOf(u.f.data)}
		m.mu.Unlock()
	}
}

// verify checks the restarted server and its volume against the model.
func (m *powerCut) verify(s *server, round int) {
	t := m.t
	t.Helper()
	where := fmt.Sprintf("after power cut %d", round)
	for name, f := range m.files {
		got := pcState{}
		b, err := os.ReadFile(filepath.Join(m.mnt, name))
		switch {
		case err == nil:
			got = stateOf(b)
		case !os.IsNotExist(err):
			t.Fatalf("%s: reading %s: %v", where, name, err)
		}
		switch {
		case got == f.acked:
		case f.inflight != nil && got == *f.inflight:
			f.acked = got // it was done; its answer was lost
		case f.inflight != nil:
			t.Fatalf("%s: %s is %v; acknowledged %v, in flight %v: an operation must be there whole or not at all", where, name, got, f.acked, *f.inflight)
		case f.acked.present:
			t.Fatalf("%s: acknowledged upload %s is %v, want %v", where, name, got, f.acked)
		default:
			t.Fatalf("%s: %s, deleted and acknowledged, came back (%v)", where, name, got)
		}
		if f.inflight != nil {
			m.inflightSeen++
		}
		f.inflight = nil
		if !f.acked.present {
			delete(m.files, name) // gone for good; nothing more to check
		}
	}
	// up2k: a re-handshake never asks for an acknowledged chunk; an upload
	// whose last chunk was thanked is complete (checked above as a file
	// unless it was deleted since).
	var left []*pcUp
	for _, u := range m.ups {
		if !u.known {
			continue // never answered: nothing was promised
		}
		if f := m.files[u.name]; u.done && (f == nil || f.acked != stateOf(u.f.data)) {
			continue // deleted or replaced since (a re-handshake would upload it again)
		}
		rep, code, rb, ok := m.handshakeWhy(s, u)
		if !ok {
			t.Fatalf("%s: re-handshake for %s (%d chunks, %d acknowledged, done %v) failed: %d %s\nserver log:\n%s", where, u.name, len(u.f.hashes), len(u.acked), u.done, code, rb, s.logs)
		}
		for _, h := range rep.Hash {
			for j, hj := range u.f.hashes {
				if hj == h && u.acked[j] {
					t.Fatalf("%s: the server asks again for chunk %d of %s (%d chunks, done %v), acknowledged before the cut\nserver log:\n%s", where, j, u.name, len(u.f.hashes), u.done, s.logs)
				}
			}
		}
		if u.done && len(rep.Hash) > 0 {
			t.Fatalf("%s: completed upload %s needs %d chunks again", where, u.name, len(rep.Hash))
		}
		if !u.done && len(rep.Hash) == 0 {
			// Its last chunk was stored before the cut, its thank lost.
			b, err := os.ReadFile(filepath.Join(m.mnt, u.name))
			if err != nil || !bytes.Equal(b, u.f.data) {
				t.Fatalf("%s: up2k %s needs nothing more, but its file is not whole (%d of %d bytes, %v)", where, u.name, len(b), len(u.f.data), err)
			}
			u.done = true
			m.files[u.name] = &pcFile{acked: stateOf(u.f.data)}
		}
		if !u.done {
			left = append(left, u) // stays unfinished; checked again next time
		}
	}
	// Finished uploads were checked as files; keep only the open ones.
	m.ups = left
	m.prune(s, where)
}

// prune deletes most of the files checked so far through the server, so
// that the image does not fill up over hundreds of rounds; the next
// restart checks that none of them came back.
func (m *powerCut) prune(s *server, where string) {
	var names []string
	for name, f := range m.files {
		if f.acked.present && m.rng.IntN(4) != 0 {
			names = append(names, name)
		}
	}
	for len(names) > 0 {
		n := min(len(names), 200)
		paths := make([]string, n)
		for i, name := range names[:n] {
			paths[i] = "/" + name
		}
		b, _ := json.Marshal(paths)
		code, rb, ok := pcDo("POST", s.URL+"/?delete", b, "Content-Type: application/json")
		if !ok {
			m.t.Fatalf("%s: deleting %d checked files: %d %s", where, n, code, rb)
		}
		for _, name := range names[:n] {
			m.files[name].acked = pcState{}
		}
		names = names[n:]
	}
}
