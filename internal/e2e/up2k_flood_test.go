package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// vmHWM is the peak resident memory of process pid (VmHWM), in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

// floodResult counts the answers to a handshake flood.
type floodResult struct {
	ok, refused atomic.Int64
	codes       sync.Map // status → count
	sample      sync.Map // status → a body
}

// flood sends n handshakes for distinct files of size bytes (random chunk
// hashes; nothing is ever uploaded), spread over the client addresses,
// par at a time.
func flood(t *testing.T, s *server, addrs []string, n, par int, size int64) *floodResult {
	t.Helper()
	clients := make([]*http.Client, len(addrs))
	for i, a := range addrs {
		clients[i] = clientFromAddr(a)
	}
	nh := int((size + copypartyChunkSize(size) - 1) / copypartyChunkSize(size))
	var next atomic.Int64
	var wg sync.WaitGroup
	res := &floodResult{}
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			raw := make([]byte, 33)
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				hs := make([]string, nh)
				for j := range hs {
					rand.Read(raw)
					hs[j] = base64.RawURLEncoding.EncodeToString(raw)
				}
				body, _ := json.Marshal(map[string]any{"name": fmt.Sprintf("flood-%d.bin", i), "size": size, "hash": hs})
				req, _ := http.NewRequestWithContext(context.Background(), "POST", s.URL+"/flood/", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := clients[int(i)%len(clients)].Do(req)
				if err != nil {
					res.codes.Store(-1, true)
					res.sample.LoadOrStore(-1, err.Error())
					continue
				}
				var b bytes.Buffer
				b.ReadFrom(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					res.ok.Add(1)
				} else {
					res.refused.Add(1)
					res.sample.LoadOrStore(resp.StatusCode, b.String())
				}
				c, _ := res.codes.LoadOrStore(resp.StatusCode, new(atomic.Int64))
				if ci, ok := c.(*atomic.Int64); ok {
					ci.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return res
}

func (r *floodResult) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d accepted, %d refused;", r.ok.Load(), r.refused.Load())
	r.codes.Range(func(k, v any) bool {
		if c, ok := v.(*atomic.Int64); ok {
			fmt.Fprintf(&sb, " %v×%d", k, c.Load())
		}
		return true
	})
	r.sample.Range(func(k, v any) bool {
		fmt.Fprintf(&sb, "\n  %v: %.200s", k, v)
		return true
	})
	return sb.String()
}

// refusedRight checks that every refusal of a flood was one of the
// capacity answers (429 for the address's share, 503 for the server's,
// 413 for larger than the free space) with its message.
func refusedRight(t *testing.T, what string, r *floodResult) {
	t.Helper()
	r.codes.Range(func(k, v any) bool {
		switch k {
		case 200:
		case 429, 503, 413:
			msg, _ := r.sample.Load(k)
			if m, _ := msg.(string); !strings.Contains(m, "unfinished uploads") && !strings.Contains(m, "free space") {
				t.Errorf("%s: %v answered %q", what, k, msg)
			}
		default:
			t.Errorf("%s: status %v: %v", what, k, r)
		}
		return true
	})
}

// freeSpace is the free space of dir's file system.
func freeSpace(t *testing.T, dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize) // Bsize is int64 on Linux, uint32 on darwin
}

// floodBound is what the server's peak resident memory must stay under
// through the floods of TestUp2kHandshakeFlood (about 65 MiB are seen).
const floodBound = 160 << 20

// TestUp2kHandshakeFlood sends floods of 10,000 handshakes for uploads
// that never come, from one address and from 64, and checks that the
// unfinished uploads are capped (per address: --reg-cap-ip, 1024, and
// half of the free space; in all: the free space and --reg-cap), that
// the server's memory stays bounded (floodBound, read from VmHWM), and
// that an upload from another address goes through during each flood.
func TestUp2kHandshakeFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("floods of 10,000 handshakes")
	}
	n := 10000
	if raceEnabled {
		n = 2000 // the race detector is some ten times slower
	}
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rw", "--hist", t.TempDir())
	free := freeSpace(t, dir)
	legit := 0
	during := func(what string, fl func() *floodResult) *floodResult {
		t.Helper()
		done := make(chan *floodResult, 1)
		go func() { done <- fl() }()
		time.Sleep(300 * time.Millisecond) // well into the flood
		f := newUp2kFile(randomBytes(3 << 20))
		name := fmt.Sprintf("legit-%d.bin", legit)
		legit++
		up2kUpload(t, s, "/", name, f, 1600000000, 2)
		wantUploaded(t, filepath.Join(dir, name), f.data, 1600000000)
		r := <-done
		t.Logf("%s: %v", what, r)
		refusedRight(t, what, r)
		return r
	}
	one := []string{"127.0.0.2"}
	// The flood: 1 GiB each, from one address. Half the free
	// space at most is promised to it.
	// The free space moves under other processes (files of ended tests
	// and processes going away): the bound takes the most seen during the
	// flood, sampled every 20 ms, with some slack.
	var most atomic.Int64
	most.Store(free)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			var st syscall.Statfs_t
			if syscall.Statfs(dir, &st) == nil {
				if f := int64(st.Bavail) * int64(st.Bsize); f > most.Load() {
					most.Store(f)
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	r := during("1 GiB × n from one address", func() *floodResult { return flood(t, s, one, n, 32, 1<<30) })
	close(stop)
	<-sampled
	if got := r.ok.Load(); got > 1024 || got<<30 > max(most.Load(), freeSpace(t, dir))*6/10+1<<30 {
		t.Fatalf("one address got %d unfinished uploads of 1 GiB with %d GiB free (at most %d GiB during the flood)", got, free>>30, most.Load()>>30)
	}
	// Small ones from one address: its cap.
	small := min(4<<20, free/4/int64(n))
	r = during("small × n from one address", func() *floodResult {
		return flood(t, s, []string{"127.0.0.3"}, n, 32, small)
	})
	if got := r.ok.Load(); got > 1024 {
		t.Fatalf("one address got %d unfinished uploads, want at most 1024", got)
	}
	if n > 1024 && small*1024 < free/4 && r.ok.Load() != 1024 {
		t.Fatalf("one address got %d unfinished uploads, want 1024 (its cap)", r.ok.Load())
	}
	// From 64 addresses.
	var many []string
	for i := range 64 {
		many = append(many, fmt.Sprintf("127.0.1.%d", i+1))
	}
	r = during("small × n from 64 addresses", func() *floodResult { return flood(t, s, many, n, 32, small) })
	if r.ok.Load() == 0 {
		t.Fatal("the flood from many addresses was refused altogether")
	}
	peak := vmHWM(t, s.cmd.Process.Pid)
	t.Logf("peak resident memory (VmHWM) after %d handshakes: %d MiB (bound %d MiB)", 3*n, peak>>20, floodBound>>20)
	if !raceEnabled && peak > floodBound {
		t.Fatalf("peak resident memory %d MiB, want under %d MiB", peak>>20, floodBound>>20)
	}
}

// With small caps: beyond --reg-cap-ip an address gets 429, beyond
// --reg-cap everyone gets 503, each with a clear message and
// Retry-After; an upload that finishes gives its place back; a restart
// counts the unfinished uploads it takes up.
func TestUp2kUnfinishedCaps(t *testing.T) {
	t.Parallel()
	dir, hist := t.TempDir(), t.TempDir()
	args := []string{"-v", dir + "::rw", "--hist", hist, "--reg-cap", "30", "--reg-cap-ip", "10"}
	s := start(t, args...)
	f := newUp2kFile(randomBytes(1 << 20))
	rep := up2kHandshake(t, s, "/", "mine.bin", f, 1600000000, nil) // 1 of 30
	r := flood(t, s, []string{"127.0.0.4"}, 15, 4, 1<<20)
	if r.ok.Load() != 10 || r.refused.Load() != 5 {
		t.Fatalf("one address: %v, want 10 accepted and 5 refused", r)
	}
	if m, _ := r.sample.Load(429); !strings.Contains(fmt.Sprint(m), "too many unfinished uploads from your address") {
		t.Fatalf("one address: %v", r)
	}
	r = flood(t, s, []string{"127.0.0.5", "127.0.0.6", "127.0.0.7"}, 30, 4, 1<<20)
	if r.ok.Load() != 19 || r.refused.Load() != 11 {
		t.Fatalf("three more addresses: %v, want 19 accepted and 11 refused", r)
	}
	if m, _ := r.sample.Load(503); !strings.Contains(fmt.Sprint(m), "too many unfinished uploads") {
		t.Fatalf("three more addresses: %v", r)
	}
	g := newUp2kFile(randomBytes(1 << 20))
	resp, b := postHandshake(t, s, "/", map[string]any{"name": "late.bin", "size": len(g.data), "hash": g.hashes})
	wantStatus(t, resp, b, 503)
	if resp.Header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	// Finishing an upload gives its place back.
	postChunk(t, s, rep, f, 0)
	wantUploaded(t, filepath.Join(dir, "mine.bin"), f.data, 1600000000)
	up2kHandshake(t, s, "/", "late.bin", g, 1600000000, nil)
	// After a restart the 30 unfinished uploads still count.
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	s = start(t, args...)
	h := newUp2kFile(randomBytes(1 << 20))
	resp, b = postHandshake(t, s, "/", map[string]any{"name": "after.bin", "size": len(h.data), "hash": h.hashes})
	wantStatus(t, resp, b, 503)
	// The one that was resumed can still be finished.
	again := up2kHandshake(t, s, "/", "late.bin", g, 1600000000, nil)
	postChunk(t, s, again, g, 0)
	wantUploaded(t, filepath.Join(dir, "late.bin"), g.data, 1600000000)
}
