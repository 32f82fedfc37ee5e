package e2e

// TestCrashLoop SIGKILLs hoard at random moments under concurrent up2k,
// PUT and append load, round after round on one volume with plain -e2d,
// and checks after every restart that:
//   - every acknowledged byte is there: each PUT answered 201 holds its
//     bytes; each append log holds exactly its acknowledged appends, or
//     those and the whole append in flight at the kill, never a part of
//     one; each up2k upload whose last chunk was thanked (or whose
//     handshake said complete) is published with its bytes;
//   - no acknowledged chunk is asked for again by a re-handshake;
//   - no work file is orphaned: no .hoard-*.PARTIAL once the start-up
//     sweep is done, and no <name>.PARTIAL that is not the work file of an
//     upload in progress;
//   - search finds every acknowledged upload (plain -e2d has no scan).
//
// Small uploads (PUTs and up2k files of at most 256 KiB) are
// group-committed (store/gcommit.go): many of them run at once, and some
// acknowledged ones are deleted during the load; a deleted file must not
// come back after a restart (the start-up replay of the group-commit
// journal must never undo a delete). A SIGKILL loses only the process,
// not the page cache: the replay's rewriting of lost bytes is tested in
// store (TestGroupCommitReplayRestoresLost).
//
// Some kills are aimed at an upload's last chunk (0-5 ms after its post
// starts), some at start-up re-verification (a kill 0-40 ms after the
// restart, while big paused uploads are re-hashed). It runs
// HOARD_CRASH_ROUNDS rounds (10 by default, 3 with -short; the long tier
// runs 200 or more); HOARD_CRASH_SEED repeats a run.

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

type crashPut struct {
	sum      [32]byte
	size     int
	acked    bool // 201 received; otherwise it was in flight at a kill
	verified bool // read back after a restart
	deleting bool // a DELETE was sent; not yet answered
	deleted  bool // a DELETE of it was answered: it must never come back
}

type crashLog struct {
	acked    []byte // content acknowledged so far
	inflight []byte // the append in flight at the kill, if any
}

type crashUp struct {
	name  string
	f     *up2kFile
	sum   [32]byte
	wark  string
	purl  string
	known bool // a handshake was answered
	acked map[int]bool
	done  bool // published and acknowledged
	pause int  // chunks to send per round before pausing (0: all)
}

type crashModel struct {
	t    *testing.T
	dir  string
	rng  *mrand.Rand
	mu   sync.Mutex
	puts map[string]*crashPut // by href
	logs []*crashLog
	ups  []*crashUp
	// counters for the report
	kills, lastChunkKills, startupKills, reverifyKills int
	putsAcked, appendsAcked, chunksAcked, upsDone      int
	deletesAcked                                       int
	replays                                            int // starts that found group-commit entries
}

var crashClient = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}

func TestCrashLoop(t *testing.T) {
	t.Parallel()
	rounds := 10
	if testing.Short() {
		rounds = 3
	}
	if v := os.Getenv("HOARD_CRASH_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("HOARD_CRASH_ROUNDS=%q", v)
		}
		rounds = n
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("HOARD_CRASH_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("%d rounds, HOARD_CRASH_SEED=%d", rounds, seed)
	dir := t.TempDir()
	// More than 10,000 uploads are acknowledged in a long run (the long
	// tier's 200 rounds pass it near round 100): the search that checks
	// them all may return that many.
	args := []string{"-v", dir + "::rwd", "-e2d", "--srch-max", "1000000"}
	m := &crashModel{t: t, dir: dir, rng: mrand.New(mrand.NewPCG(seed, 7)), puts: map[string]*crashPut{}, logs: []*crashLog{{}, {}}}
	t0 := time.Now()
	for r := range rounds {
		s := start(t, args...)
		if r > 0 && m.rng.IntN(4) == 0 {
			// Kill it again while it re-checks the chunks of unfinished
			// uploads (the big paused ones take a while).
			time.Sleep(time.Duration(m.rng.IntN(40)) * time.Millisecond)
			rechecking := strings.Contains(s.logs.String(), "re-checking their chunks")
			s.kill(t)
			m.kills++
			m.startupKills++
			if rechecking && strings.Count(s.logs.String(), "unfinished upload resumed") < strings.Count(s.logs.String(), "re-checking") {
				m.reverifyKills++
			}
			s = start(t, args...)
		}
		if strings.Contains(s.logs.String(), "replayed the group-commit journal") {
			m.replays++
		}
		m.verify(s, r)
		m.load(s, r)
	}
	s := start(t, args...)
	m.verify(s, rounds)
	t.Logf("%d rounds in %v: %d kills (%d aimed at a last chunk, %d at start-up, %d of those during re-verification); acknowledged: %d PUTs, %d appends, %d up2k chunks, %d up2k uploads completed, %d deletes; %d starts replayed group-commit entries; all verified after every restart",
		rounds, time.Since(t0).Round(time.Second), m.kills, m.lastChunkKills, m.startupKills, m.reverifyKills, m.putsAcked, m.appendsAcked, m.chunksAcked, m.upsDone, m.deletesAcked, m.replays)
}

// load runs PUT, append and up2k workers and kills the server under them.
func (m *crashModel) load(s *server, round int) {
	t := m.t
	stop := make(chan struct{})
	lastChunk := make(chan struct{}, 1)
	var wg sync.WaitGroup
	seeds := func() *mrand.Rand { return mrand.New(mrand.NewPCG(m.rng.Uint64(), m.rng.Uint64())) }
	for w := range 6 { // 2 of any size, 4 small (group-committed)
		rng := seeds()
		wg.Go(func() { m.putWorker(s, round, w, rng, stop) })
	}
	{
		rng := seeds()
		wg.Go(func() { m.deleteWorker(s, rng, stop) })
	}
	for i := range m.logs {
		rng := seeds()
		wg.Go(func() { m.appendWorker(s, i, rng, stop) })
	}
	// up2k: the open uploads go on, and one or two new ones start.
	var ups []*crashUp
	for _, u := range m.ups {
		if !u.done {
			ups = append(ups, u)
		}
	}
	for i := range 1 + m.rng.IntN(2) {
		size := 2<<20 + m.rng.IntN(10<<20)
		pause := 0
		if m.rng.IntN(3) == 0 {
			size = 16<<20 + m.rng.IntN(16<<20) // left half-done, re-checked at the next start
			pause = int(size>>20) / 2
		}
		u := &crashUp{name: fmt.Sprintf("crashf-r%03d-u%d.bin", round, i), f: newUp2kFile(randomBytes(size)), acked: map[int]bool{}, pause: pause}
		u.sum = sha256.Sum256(u.f.data)
		m.mu.Lock()
		m.ups = append(m.ups, u)
		m.mu.Unlock()
		ups = append(ups, u)
	}
	for i := range 2 + m.rng.IntN(4) { // small files: group-committed
		u := &crashUp{name: fmt.Sprintf("crashf-r%03d-s%d.bin", round, i), f: newUp2kFile(randomBytes(1 + m.rng.IntN(256<<10))), acked: map[int]bool{}}
		u.sum = sha256.Sum256(u.f.data)
		m.mu.Lock()
		m.ups = append(m.ups, u)
		m.mu.Unlock()
		ups = append(ups, u)
	}
	for _, u := range ups {
		rng := seeds()
		wg.Go(func() { m.up2kWorker(s, u, rng, stop, lastChunk) })
	}
	aim := m.rng.IntN(3) == 0
	wait := time.Duration(20+m.rng.IntN(700)) * time.Millisecond
	if aim {
		select {
		case <-lastChunk:
			time.Sleep(time.Duration(m.rng.IntN(5000)) * time.Microsecond)
			m.lastChunkKills++
		case <-time.After(3 * time.Second):
		}
	} else {
		time.Sleep(wait)
	}
	s.kill(t)
	m.kills++
	close(stop)
	wg.Wait()
}

func stopped(stop chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

func (m *crashModel) putWorker(s *server, round, w int, rng *mrand.Rand, stop chan struct{}) {
	for i := 0; !stopped(stop); i++ {
		href := fmt.Sprintf("/p/crashf-r%03d-w%d-%d.bin", round, w, i)
		n := 1 + rng.IntN(1536<<10)
		if w >= 2 {
			n = 1 + rng.IntN(256<<10) // small: group-committed
		}
		data := randomBytes(n)
		p := &crashPut{sum: sha256.Sum256(data), size: len(data)}
		m.mu.Lock()
		m.puts[href] = p
		m.mu.Unlock()
		req, _ := http.NewRequest("PUT", s.URL+href, bytes.NewReader(data))
		resp, err := crashClient.Do(req)
		if err != nil {
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 201 {
			m.t.Errorf("PUT %s: %d", href, resp.StatusCode)
			return
		}
		m.mu.Lock()
		p.acked = true
		m.putsAcked++
		m.mu.Unlock()
	}
}

// deleteWorker deletes acknowledged PUTs (small ones, mostly of this
// round: still in the group-commit journal) while the load goes on.
func (m *crashModel) deleteWorker(s *server, rng *mrand.Rand, stop chan struct{}) {
	for !stopped(stop) {
		time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
		var href string
		m.mu.Lock()
		var cands []string
		for h, p := range m.puts {
			if p.acked && !p.deleted && !p.deleting && p.size <= 256<<10 {
				cands = append(cands, h)
			}
		}
		if len(cands) > 0 {
			slices.Sort(cands)
			href = cands[rng.IntN(len(cands))]
			m.puts[href].deleting = true
		}
		m.mu.Unlock()
		if href == "" {
			continue
		}
		req, _ := http.NewRequest("DELETE", s.URL+href, nil)
		resp, err := crashClient.Do(req)
		if err != nil {
			return // the server is gone: the delete may or may not have happened
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			m.t.Errorf("DELETE %s: %d %s", href, resp.StatusCode, b)
			return
		}
		m.mu.Lock()
		p := m.puts[href]
		p.deleting, p.deleted = false, true
		m.deletesAcked++
		m.mu.Unlock()
	}
}

func (m *crashModel) appendWorker(s *server, i int, rng *mrand.Rand, stop chan struct{}) {
	l := m.logs[i]
	href := fmt.Sprintf("/crashf-log%d.txt", i)
	for !stopped(stop) {
		data := bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, 1+rng.IntN(256<<10))
		m.mu.Lock()
		l.inflight = data
		m.mu.Unlock()
		req, _ := http.NewRequest("PUT", s.URL+href+"?apnd", bytes.NewReader(data))
		resp, err := crashClient.Do(req)
		if err != nil {
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 201 {
			m.t.Errorf("append to %s: %d", href, resp.StatusCode)
			return
		}
		m.mu.Lock()
		l.acked = append(l.acked, data...)
		l.inflight = nil
		m.appendsAcked++
		m.mu.Unlock()
	}
}

// handshake handshakes for u; ok is false when the server is gone.
func (m *crashModel) handshake(s *server, u *crashUp) (handshakeReply, bool) {
	b, _ := json.Marshal(map[string]any{"name": u.name, "size": len(u.f.data), "lmod": 1600000000, "hash": u.f.hashes})
	req, _ := http.NewRequest("POST", s.URL+"/u/", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := crashClient.Do(req)
	if err != nil {
		return handshakeReply{}, false
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	var rep handshakeReply
	if resp.StatusCode != 200 || json.Unmarshal(rb, &rep) != nil {
		if resp.StatusCode != 200 && !strings.Contains(string(rb), "shutting down") {
			m.t.Errorf("handshake for %s: %d %s", u.name, resp.StatusCode, rb)
		}
		return handshakeReply{}, false
	}
	return rep, true
}

// checkNeed fails when the server asks for a chunk it acknowledged.
func (m *crashModel) checkNeed(u *crashUp, rep handshakeReply, when string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, h := range rep.Hash {
		i := u.f.index(h)
		if i < 0 {
			m.t.Errorf("%s: the server needs %s of %s, which was never sent", when, h, u.name)
		}
		for j, hj := range u.f.hashes {
			if hj == h && u.acked[j] {
				m.t.Errorf("%s: the server asks again for chunk %d of %s, acknowledged before (need %d of %d)", when, j, u.name, len(rep.Hash), len(u.f.hashes))
			}
		}
	}
}

func (m *crashModel) up2kWorker(s *server, u *crashUp, rng *mrand.Rand, stop chan struct{}, lastChunk chan struct{}) {
	rep, ok := m.handshake(s, u)
	if !ok {
		return
	}
	m.checkNeed(u, rep, "handshake")
	m.mu.Lock()
	u.known, u.wark, u.purl = true, rep.Wark, rep.Purl
	m.mu.Unlock()
	need := slices.Clone(rep.Hash)
	rng.Shuffle(len(need), func(i, j int) { need[i], need[j] = need[j], need[i] })
	if u.pause > 0 && len(need) > u.pause {
		need = need[:u.pause]
		u.pause = 0 // the next round finishes it
	}
	type post struct {
		h    string
		last bool // the upload's last chunk
	}
	var pw sync.WaitGroup
	ch := make(chan post)
	for range 2 {
		pw.Go(func() {
			for p := range ch {
				h := p.h
				if p.last {
					select {
					case lastChunk <- struct{}{}:
					default:
					}
				}
				code, body := postChunksNoFail(s, rep.Purl, rep.Wark, h, u.f.chunk(u.f.index(h)))
				if code == 0 {
					continue // the server is gone
				}
				if code != 200 || string(body) != "thank" {
					m.t.Errorf("chunk of %s: %d %s", u.name, code, body)
					continue
				}
				m.mu.Lock()
				for j, hj := range u.f.hashes {
					if hj == h {
						u.acked[j] = true
					}
				}
				m.chunksAcked++
				if len(u.acked) == len(u.f.hashes) {
					u.done = true // the last chunk's thank comes after publishing
					m.upsDone++
				}
				m.mu.Unlock()
			}
		})
	}
	for i, h := range need {
		if stopped(stop) {
			break
		}
		ch <- post{h: h, last: i == len(rep.Hash)-1}
	}
	close(ch)
	pw.Wait()
}

// verify checks everything acknowledged so far against the restarted
// server and the disk.
func (m *crashModel) verify(s *server, round int) {
	t := m.t
	t.Helper()
	where := fmt.Sprintf("after kill %d (round %d)", m.kills, round)
	// PUTs: acknowledged ones are there in full; one in flight is there
	// in full or not at all.
	for href, p := range m.puts {
		if p.verified && !p.deleted && !p.deleting && m.rng.IntN(50) != 0 {
			continue // read back after an earlier restart; a sample is read again
		}
		b, err := os.ReadFile(filepath.Join(m.dir, filepath.FromSlash(strings.TrimPrefix(href, "/"))))
		if p.deleted {
			if err == nil {
				t.Fatalf("%s: %s was deleted (acknowledged), but it came back", where, href)
			}
			continue // gone, as it should be; checked again at every restart
		}
		if p.deleting {
			p.deleting = false
			if err != nil {
				p.deleted = true // the delete happened; its reply was lost
				continue
			}
			// The delete never happened: the file is checked as any.
		}
		switch {
		case err != nil && p.acked:
			t.Fatalf("%s: acknowledged PUT %s is gone: %v", where, href, err)
		case err != nil:
			delete(m.puts, href) // never made; forget it
		case len(b) != p.size || sha256.Sum256(b) != p.sum:
			t.Fatalf("%s: PUT %s holds %d bytes that are not the %d sent (acknowledged: %v)", where, href, len(b), p.size, p.acked)
		default:
			p.acked, p.verified = true, true
		}
	}
	// Appends: exactly the acknowledged ones, or those and the whole one
	// in flight.
	for i, l := range m.logs {
		b, err := os.ReadFile(filepath.Join(m.dir, fmt.Sprintf("crashf-log%d.txt", i)))
		if err != nil && len(l.acked) == 0 {
			l.inflight = nil
			continue
		}
		switch {
		case bytes.Equal(b, l.acked):
		case l.inflight != nil && len(b) == len(l.acked)+len(l.inflight) && bytes.Equal(b[:len(l.acked)], l.acked) && bytes.Equal(b[len(l.acked):], l.inflight):
			l.acked = b // it completed; its reply was lost
		default:
			t.Fatalf("%s: append log %d holds %d bytes; acknowledged %d, in flight %d (an append must be there in full or not at all)", where, i, len(b), len(l.acked), len(l.inflight))
		}
		l.inflight = nil
	}
	// up2k: a re-handshake never asks for an acknowledged chunk; a
	// finished upload is there.
	work := map[string]bool{}
	for _, u := range m.ups {
		if u.done && u.f == nil {
			continue // verified complete earlier
		}
		rep, ok := m.handshake(s, u)
		if !ok {
			t.Fatalf("%s: handshake for %s failed", where, u.name)
		}
		m.checkNeed(u, rep, where)
		if t.Failed() {
			t.FailNow()
		}
		u.known, u.wark, u.purl = true, rep.Wark, rep.Purl
		if len(rep.Hash) > 0 {
			if u.done {
				t.Fatalf("%s: %s was acknowledged complete, but the server needs %d chunks", where, u.name, len(rep.Hash))
			}
			work[rep.Name] = true
			continue
		}
		b, err := os.ReadFile(filepath.Join(m.dir, "u", rep.Name))
		if err != nil || sha256.Sum256(b) != u.sum {
			t.Fatalf("%s: %s is complete as %s, but the file is not the upload (%v)", where, u.name, rep.Name, err)
		}
		if !u.done {
			m.upsDone++
		}
		u.done, u.f = true, nil // verified; its bytes are no longer needed
		u.name = rep.Name
	}
	// No orphaned work files (the sweep runs in the background at start).
	var orphans []string
	for range 500 {
		orphans = orphans[:0]
		filepath.WalkDir(m.dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && d.Name() == ".hist" {
				return filepath.SkipDir
			}
			n := d.Name()
			if !d.IsDir() && strings.HasSuffix(n, ".PARTIAL") && !(filepath.Dir(p) == filepath.Join(m.dir, "u") && work[strings.TrimSuffix(n, ".PARTIAL")]) {
				orphans = append(orphans, strings.TrimPrefix(p, m.dir))
			}
			return nil
		})
		if len(orphans) == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(orphans) > 0 {
		var why []string
		for _, o := range orphans {
			fi, err := os.Stat(filepath.Join(m.dir, o))
			if err == nil {
				why = append(why, fmt.Sprintf("%s: %d bytes, mtime %v, %d links", o, fi.Size(), fi.ModTime(), fi.Sys().(*syscall.Stat_t).Nlink))
			}
			for _, l := range strings.Split(s.logs.String(), "\n") {
				if strings.Contains(l, strings.TrimSuffix(filepath.Base(o), ".PARTIAL")) || strings.Contains(l, "swept") {
					why = append(why, l)
				}
			}
		}
		t.Fatalf("%s: work files without an upload in progress: %q\n%s", where, orphans, strings.Join(why, "\n"))
	}
	// Search: every acknowledged upload, with plain -e2d.
	want := map[string]bool{}
	for href, p := range m.puts {
		if p.acked && !p.deleted {
			want[href] = true
		}
	}
	for i, l := range m.logs {
		if len(l.acked) > 0 {
			want[fmt.Sprintf("/crashf-log%d.txt", i)] = true
		}
	}
	for _, u := range m.ups {
		if u.done {
			want["/u/"+u.name] = true
		}
	}
	waitReady(t, s)
	code, r := postSearch(t, s, map[string]any{"q": "crashf", "n": len(want) + 10000})
	if code != 200 {
		t.Fatalf("%s: search: %d %s", where, code, r.Error)
	}
	got := map[string]bool{}
	for _, h := range r.hrefs() {
		got[h] = true
	}
	var missing []string
	for h := range want {
		if !got[h] {
			missing = append(missing, h)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		t.Fatalf("%s: search misses %d of %d acknowledged uploads: %q", where, len(missing), len(want), missing)
	}
}
