package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hoard/up2k"
)

func hashesOf(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = up2k.ChunkHash([]byte{byte(i), byte(i >> 8)})
	}
	return out
}

const goodWark = "XMbpLRqVdtGmgggqjUI6uSoNMTqZVX4K6zr74XA1BRKc"

func TestParseReply(t *testing.T) {
	hs := hashesOf(3)
	ok := func(need []string) []byte {
		b, _ := json.Marshal(map[string]any{"name": "f", "purl": "/d/", "size": 3, "lmod": 1, "sprs": true, "hash": need, "dwrk": goodWark, "wark": goodWark})
		return b
	}
	r, err := parseReply(ok(hs[1:]), hs)
	if err != nil || r.Name != "f" || r.Purl != "/d/" || r.Wark != goodWark || len(r.Need) != 2 || !r.Sprs {
		t.Fatalf("good reply: %+v %v", r, err)
	}
	bad := map[string]string{
		"not json":       `{"name":`,
		"no hash":        `{"name":"f","purl":"/d/","wark":"` + goodWark + `"}`,
		"unknown chunk":  string(ok([]string{up2k.ChunkHash([]byte("other"))})),
		"chunk twice":    string(ok([]string{hs[0], hs[0]})),
		"purl not path":  `{"name":"f","purl":"http://evil/","wark":"` + goodWark + `","hash":[]}`,
		"purl query":     `{"name":"f","purl":"/d/?delete","wark":"` + goodWark + `","hash":[]}`,
		"name with /":    `{"name":"../f","purl":"/d/","wark":"` + goodWark + `","hash":[]}`,
		"short wark":     `{"name":"f","purl":"/d/","wark":"abc","hash":[]}`,
		"wark bad chars": `{"name":"f","purl":"/d/","wark":"` + strings.Repeat("+", 44) + `","hash":[]}`,
		"hash not list":  `{"name":"f","purl":"/d/","wark":"` + goodWark + `","hash":"x"}`,
	}
	for what, body := range bad {
		if _, err := parseReply([]byte(body), hs); err == nil {
			t.Errorf("%s: accepted %s", what, body)
		}
	}
}

// FuzzParseReply: whatever a server answers, a reply accepted names only
// chunks of the file (each once), a plain name, a folder path and a wark.
func FuzzParseReply(f *testing.F) {
	hs := hashesOf(4)
	f.Add([]byte(`{"name":"f","purl":"/d/","size":3,"lmod":1,"sprs":true,"hash":["` + hs[0] + `"],"wark":"` + goodWark + `"}`))
	f.Add([]byte(`{"name":"f","purl":"/","hash":[],"wark":"#` + goodWark[1:] + `","sprs":false}`))
	f.Add([]byte(`{"hits":[]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := parseReply(body, hs)
		if err != nil {
			return
		}
		if r.Name == "" || strings.ContainsAny(r.Name, "/\\") || !strings.HasPrefix(r.Purl, "/") || strings.ContainsAny(r.Purl, "?#") || !validWark(r.Wark) {
			t.Fatalf("accepted %+v", r)
		}
		seen := map[string]bool{}
		for _, h := range r.Need {
			if seen[h] || !contains(hs, h) {
				t.Fatalf("need %q not a chunk of the file once", h)
			}
			seen[h] = true
		}
	})
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// FuzzParseListing: a listing accepted gives plain names only (what --dr
// deletes is always inside the folder listed).
func FuzzParseListing(f *testing.F) {
	f.Add([]byte(`{"dirs":[{"href":"a%20b/"}],"files":[{"href":"c.txt?k=x"}]}`))
	f.Add([]byte(`{"dirs":[{"href":"../"}],"files":[]}`))
	f.Add([]byte(`{"files":[{"href":"%2e%2e"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		names, err := parseListing(body)
		if err != nil {
			return
		}
		for _, n := range names {
			if n == "" || n == "." || n == ".." || strings.ContainsAny(n, "/\\\x00") {
				t.Fatalf("accepted name %q", n)
			}
		}
	})
}

func TestParseListing(t *testing.T) {
	got, err := parseListing([]byte(`{"dirs":[{"href":"a%20b/"}],"files":[{"href":"c%23.txt?k=x"}]}`))
	if err != nil || strings.Join(got, "|") != "a b|c#.txt" {
		t.Fatalf("%q %v", got, err)
	}
	for _, b := range []string{`{"files":[{"href":"%2e%2e"}]}`, `{"files":[{"href":"a/b"}]}`, `{"files":[{"href":"%2F"}]}`, `[1]`} {
		if _, err := parseListing([]byte(b)); err == nil {
			t.Errorf("accepted %s", b)
		}
	}
}

// TestStitchParses: the header stitch makes is read back by the server's
// parser as the same run of chunks.
func TestStitchParses(t *testing.T) {
	hs := hashesOf(200)
	for _, n := range []int{1, 2, 9, 57, maxStitch} {
		g := make([]int, n)
		for i := range g {
			g[i] = 3 + i
		}
		hl, err := up2k.ParseHashList(stitch(hs, g))
		if err != nil {
			t.Fatalf("%d chunks: %v", n, err)
		}
		if hl.First != hs[3] || len(hl.Rest) != n-1 {
			t.Fatalf("%d chunks: first %q, %d more", n, hl.First, len(hl.Rest))
		}
		for i, p := range hl.Rest {
			if !strings.HasPrefix(hs[4+i], p) {
				t.Fatalf("prefix %d %q of %q", i, p, hs[4+i])
			}
		}
	}
}

func TestParseURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://h:1":         "http://h:1 /",
		"http://h:1/":        "http://h:1 /",
		"https://h/a/b":      "https://h /a/b/",
		"http://[::1]:9/x/":  "http://[::1]:9 /x/",
		"http://h/sp%20ace/": "http://h /sp ace/",
	} {
		b, f, err := ParseURL(in)
		if err != nil || b+" "+f != want {
			t.Errorf("%s: %q %q %v, want %s", in, b, f, err, want)
		}
	}
	for _, in := range []string{"", "h:1/x", "ftp://h/", "http://", "http:///x", "http://h/?x", "http://u:p@h/", "http://h/a/../b", "./dir", "http://h/#f"} {
		if _, _, err := ParseURL(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

// TestHasherMatches: chunk hashes from the pool (lanes or not) equal
// up2k.HashFile's for sizes around the chunk and piece edges.
func TestHasherMatches(t *testing.T) {
	// Chunks of several windows, hashed from mappings in turn.
	defer func(w int64) { mapWindow = w }(mapWindow)
	mapWindow = 256 << 10
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	for _, lanes := range []bool{true, false} {
		h := newHasher(2)
		if !lanes {
			h.close()
			h = &hasher{par: 2, bufs: make(chan []byte, 4)}
			for range 4 {
				h.bufs <- make([]byte, pieceSize)
			}
		}
		for _, size := range []int64{1, 127, 128, 129, pieceSize - 1, pieceSize, pieceSize + 1, 1<<20 - 1, 1 << 20, 1<<20 + 1, 3<<20 + 12345, 40<<20 + 7} {
			if size > 8<<20 && !lanes {
				continue
			}
			b := make([]byte, size)
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			p := filepath.Join(dir, "f")
			os.WriteFile(p, b, 0o644)
			f, _ := os.Open(p)
			got, err := h.hashFile(context.Background(), f, size)
			_, want, werr := up2k.HashFile(context.Background(), bytes.NewReader(b), size, "s", 0, "", "f")
			f.Close()
			if err != nil || werr != nil || strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("lanes=%v size %d: %v %v\n%q\n%q", lanes, size, err, werr, got, want)
			}
		}
		// A file shorter than the size it was announced with: errChanged,
		// and nothing of it counted as hashed.
		var hashed atomic.Int64
		h.done = func(n int64) { hashed.Add(n) }
		p := filepath.Join(dir, "short")
		os.WriteFile(p, make([]byte, 20<<20), 0o644)
		f, _ := os.Open(p)
		if _, err := h.hashFile(context.Background(), f, 40<<20); !errors.Is(err, errChanged) {
			t.Fatalf("lanes=%v: a short file gave %v", lanes, err)
		}
		if n := hashed.Load(); n != 0 {
			t.Fatalf("lanes=%v: a file that failed to hash left %d bytes counted as hashed", lanes, n)
		}
		f.Close()
		h.done = nil
		if len(h.bufs) != cap(h.bufs) {
			t.Fatalf("lanes=%v: %d of %d buffers back", lanes, len(h.bufs), cap(h.bufs))
		}
		if len(h.maps) != 0 {
			t.Fatalf("lanes=%v: %d mappings left", lanes, len(h.maps))
		}
		h.close()
	}
}

// TestRetries: 503 and 429 (with Retry-After) and dropped connections are
// retried; a 400 is not; 403 is ErrAuth.
func TestRetries(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch k := n.Add(1); {
		case r.URL.Path == "/bad":
			http.Error(w, "no such thing\nsecond line", http.StatusBadRequest)
		case r.URL.Path == "/auth":
			http.Error(w, "who", http.StatusForbidden)
		case k == 1:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case k == 2:
			http.Error(w, "slow down", http.StatusTooManyRequests)
		case k == 3:
			hj, _ := w.(http.Hijacker)
			c, _, _ := hj.Hijack()
			c.Close()
		default:
			w.Write([]byte("ok"))
		}
	}))
	defer srv.Close()
	w := &wire{base: srv.URL, hc: srv.Client(), retries: 5}
	get := func(p string) func() (*http.Request, error) {
		return func() (*http.Request, error) { return http.NewRequest("GET", srv.URL+p, nil) }
	}
	t0 := time.Now()
	b, err := w.do(context.Background(), get("/"), false)
	if err != nil || string(b) != "ok" || n.Load() != 4 {
		t.Fatalf("%q %v after %d tries", b, err, n.Load())
	}
	if time.Since(t0) < time.Second {
		t.Fatalf("Retry-After: 1 was not honoured (%v)", time.Since(t0))
	}
	n.Store(10)
	_, err = w.do(context.Background(), get("/bad"), true)
	if he, ok := isHTTP(err, 400); !ok || he.Msg != "no such thing" || n.Load() != 11 {
		t.Fatalf("400: %v after %d", err, n.Load()-10)
	}
	if _, err := w.do(context.Background(), get("/auth"), true); !errors.Is(err, ErrAuth) {
		t.Fatalf("403: %v", err)
	}
}

func TestFilter(t *testing.T) {
	re, err := CompileX(`.*/\.git/.*`)
	if err != nil {
		t.Fatal(err)
	}
	f := Filter{Exclude: []*regexp.Regexp{re}, Skip: []string{"*.tmp", "cache"}, Only: []string{"*.jpg", "keep/*"}}
	for _, c := range []struct {
		abs, rel  string
		dir, skip bool
	}{
		{"/a/.GIT/x", ".git/x", false, true},
		{"/a/b.jpg", "b.jpg", false, false},
		{"/a/b.png", "b.png", false, true},
		{"/a/keep/b.png", "keep/b.png", false, false},
		{"/a/x.tmp", "x.tmp", false, true},
		{"/a/cache", "cache", true, true},
		{"/a/sub", "sub", true, false},
	} {
		if got := f.skip(c.abs, c.rel, c.dir); got != c.skip {
			t.Errorf("%s: skip %v, want %v", c.rel, got, c.skip)
		}
	}
}

// TestNoFalseAck: a redirect is not taken for an acknowledgement (nor
// followed, which would carry the password elsewhere), and what a server
// says is printed without its control characters.
func TestNoFalseAck(t *testing.T) {
	var pw atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			pw.Store(r.Header.Get("PW"))
			return
		}
		if r.URL.Path == "/esc" {
			http.Error(w, "bad \x1b]0;pwned\x07 thing", http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}))
	defer srv.Close()
	w := &wire{base: srv.URL, pw: "secret", hc: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, retries: 2}
	_, err := w.do(context.Background(), func() (*http.Request, error) { return http.NewRequest("POST", srv.URL+"/chunk", nil) }, false)
	if _, ok := isHTTP(err, http.StatusFound); !ok {
		t.Fatalf("a 302 gave %v, want an HTTPError", err)
	}
	if v := pw.Load(); v != nil {
		t.Fatalf("the redirect was followed with PW %q", v)
	}
	_, err = w.do(context.Background(), func() (*http.Request, error) { return http.NewRequest("GET", srv.URL+"/esc", nil) }, false)
	if he, ok := isHTTP(err, 400); !ok || strings.ContainsAny(he.Msg, "\x1b\x07") {
		t.Fatalf("error %q keeps control characters", err)
	}
}

// fakeServer is an up2k server in the test: it checks every chunk post
// against the hashes (offsets and stitching), records the most posts in
// flight at once, and answers sprs as told.
type fakeServer struct {
	t        *testing.T
	sprs     bool
	mu       sync.Mutex
	files    map[string]*fakeFile // by wark
	inflight map[string]int       // posts in flight per file, under mu
	maxIn    int                  // the most for one file
	posts    atomic.Int32
	relocate bool     // answer with another folder and name (as a server hook may)
	asked    []string // handshakes: folder + name, under mu
	done     bool     // a post that completes a file says so (up2k.DoneHeader), as hoard does
	runs     [][2]int // each post's first chunk and chunk count, under mu
}

type fakeFile struct {
	size   int64
	hashes []string
	have   map[int]bool
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if hh := r.Header.Get("X-Up2k-Hash"); hh != "" {
		wk := r.Header.Get("X-Up2k-Wark")
		f.mu.Lock()
		f.inflight[wk]++
		f.maxIn = max(f.maxIn, f.inflight[wk])
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			f.inflight[wk]--
			f.mu.Unlock()
		}()
		f.posts.Add(1)
		time.Sleep(2 * time.Millisecond)
		f.mu.Lock()
		ff := f.files[r.Header.Get("X-Up2k-Wark")]
		f.mu.Unlock()
		hl, err := up2k.ParseHashList(hh)
		if ff == nil || err != nil {
			http.Error(w, "bad post", http.StatusBadRequest)
			return
		}
		i := slices.Index(ff.hashes, hl.First)
		idx := []int{i}
		for k, p := range hl.Rest {
			if !strings.HasPrefix(ff.hashes[i+1+k], p) {
				http.Error(w, "bad prefix", http.StatusBadRequest)
				return
			}
			idx = append(idx, i+1+k)
		}
		cs := up2k.ChunkSize(ff.size)
		body, _ := io.ReadAll(r.Body)
		for k, c := range idx {
			n := min(cs, ff.size-int64(c)*cs)
			if int64(len(body)) < n || up2k.ChunkHash(body[:n]) != ff.hashes[c] {
				f.t.Errorf("chunk %d (post chunk %d) does not match its hash", c, k)
				http.Error(w, "your chunk got corrupted somehow", http.StatusBadRequest)
				return
			}
			body = body[n:]
		}
		f.mu.Lock()
		f.runs = append(f.runs, [2]int{idx[0], len(idx)})
		for _, c := range idx {
			ff.have[c] = true
		}
		complete := len(ff.have) == len(slices.Compact(slices.Sorted(slices.Values(ff.hashes))))
		f.mu.Unlock()
		if f.done && complete {
			w.Header().Set(up2k.DoneHeader, "/up/f%20done")
		}
		io.WriteString(w, "thank")
		return
	}
	var h struct {
		Name string
		Size int64
		Hash []string
	}
	json.NewDecoder(r.Body).Decode(&h)
	wark := up2k.Wark("s", h.Size, h.Hash)
	f.mu.Lock()
	f.asked = append(f.asked, r.URL.Path+h.Name)
	purl, name := r.URL.Path, h.Name
	if f.relocate && !strings.HasPrefix(purl, "/moved/") {
		purl, name = "/moved"+purl, "r-"+name
	}
	ff := f.files[wark]
	if ff == nil {
		ff = &fakeFile{size: h.Size, hashes: h.Hash, have: map[int]bool{}}
		f.files[wark] = ff
	}
	need := []string{}
	for i, x := range ff.hashes {
		if !ff.have[i] && !slices.Contains(need, x) && slices.Index(ff.hashes, x) == i {
			need = append(need, x)
		}
	}
	f.mu.Unlock()
	json.NewEncoder(w).Encode(map[string]any{"name": name, "purl": purl, "hash": need, "wark": wark, "sprs": f.sprs})
}

// TestRunFake runs the whole client in the test (under -race too)
// against fakeServer: every chunk arrives right (the server checks), a
// non-sparse server gets one post of a file at a time, a sparse one
// several.
func TestRunFake(t *testing.T) {
	src := t.TempDir()
	r := rand.New(rand.NewPCG(3, 4))
	var total int64
	for i, size := range []int{0, 1, 5000, 1 << 20, 3<<20 + 5, 9<<20 + 1} {
		b := make([]byte, size)
		for k := range b {
			b[k] = byte(r.Uint32())
		}
		if i == 5 {
			copy(b[2<<20:3<<20], b[:1<<20]) // a chunk twice in one file
		}
		total += int64(size)
		os.MkdirAll(filepath.Join(src, "d", "sub"), 0o755)
		os.WriteFile(filepath.Join(src, "d", "sub", fmt.Sprintf("f%d", i)), b, 0o644)
	}
	for _, sprs := range []bool{false, true} {
		fs := &fakeServer{t: t, sprs: sprs, files: map[string]*fakeFile{}, inflight: map[string]int{}}
		srv := httptest.NewServer(fs)
		tg, err := NewTarget(filepath.Join(src, "d"))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		sum, err := Run(context.Background(), Options{URL: srv.URL + "/up/", Targets: []Target{tg}, Jobs: 4, PostSize: 2 << 20, JSON: true, Stdout: &out})
		srv.Close()
		if err != nil || sum.Failed != 0 || sum.Files != 6 || sum.Bytes != total {
			t.Fatalf("sprs=%v: %v %+v\n%s", sprs, err, sum, out.String())
		}
		if sum.Sent != total-(1<<20) {
			t.Errorf("sprs=%v: sent %d, want %d (the repeated chunk once)", sprs, sum.Sent, total-(1<<20))
		}
		if m := fs.maxIn; sprs && m < 2 || !sprs && m != 1 {
			t.Errorf("sprs=%v: up to %d posts of one file at once", sprs, m)
		}
		for _, ff := range fs.files {
			for i, h := range ff.hashes {
				if slices.Index(ff.hashes, h) == i && !ff.have[i] {
					t.Errorf("sprs=%v: chunk %d of a %d-byte file never arrived", sprs, i, ff.size)
				}
			}
		}
	}
}

// TestRunDoneHeader: against a server whose completing post says so
// (hoard), a file costs one handshake, not two; the summary and the
// reported path are the header's; without it (copyparty) the final
// handshake is made as before.
func TestRunDoneHeader(t *testing.T) {
	src := t.TempDir()
	sizes := []int{1, 4096, 5000, 3<<20 + 5}
	for i, size := range sizes {
		b := make([]byte, size)
		for k := range b {
			b[k] = byte(k*7 + i)
		}
		os.WriteFile(filepath.Join(src, fmt.Sprintf("f%d", i)), b, 0o644)
	}
	for _, done := range []bool{true, false} {
		fs := &fakeServer{t: t, sprs: true, done: done, files: map[string]*fakeFile{}, inflight: map[string]int{}}
		srv := httptest.NewServer(fs)
		tg, err := NewTarget(src)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		sum, err := Run(context.Background(), Options{URL: srv.URL + "/up/", Targets: []Target{tg}, Jobs: 4, PostSize: 2 << 20, JSON: true, Stdout: &out})
		srv.Close()
		if err != nil || sum.Failed != 0 || sum.Uploaded != int64(len(sizes)) {
			t.Fatalf("done=%v: %v %+v\n%s", done, err, sum, out.String())
		}
		want := 2 * len(sizes)
		if done {
			want = len(sizes)
			if n := strings.Count(out.String(), `"url":"/up/f done"`); n != len(sizes) {
				t.Errorf("done=%v: %d files reported at the header's path, want %d\n%s", done, n, len(sizes), out.String())
			}
		}
		if len(fs.asked) != want {
			t.Errorf("done=%v: %d handshakes for %d files, want %d", done, len(fs.asked), len(sizes), want)
		}
	}
	// A header that is no plain path is not believed: the file is
	// finished by a handshake.
	for _, v := range []string{"", "up/x", "/up/", "/up/x?y", "/up/%0ax", "/up/%zz"} {
		h := http.Header{}
		h.Set(up2k.DoneHeader, v)
		if p, ok := parseDone(h); ok {
			t.Errorf("parseDone(%q) = %q, accepted", v, p)
		}
	}
}

// TestWait422: a handshake waits out 422 (a duplicate still being
// uploaded elsewhere) past the retry count; other requests do not.
func TestWait422(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 8 {
			http.Error(w, "partial upload exists at a different location; please resume uploading here instead:\n/x ", http.StatusUnprocessableEntity)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	w := &wire{base: srv.URL, hc: srv.Client(), retries: 2}
	mk := func() (*http.Request, error) { return http.NewRequest("POST", srv.URL+"/", nil) }
	if b, err := w.do(context.Background(), mk, true); err != nil || string(b) != "ok" {
		t.Fatalf("%q %v after %d tries", b, err, n.Load())
	}
	n.Store(0)
	if _, err := w.do(context.Background(), mk, false); err == nil || n.Load() != 1 {
		t.Fatalf("a chunk post retried 422: %v after %d", err, n.Load())
	}
	old := patience422
	patience422 = 0
	defer func() { patience422 = old }()
	n.Store(0)
	if _, err := w.do(context.Background(), mk, true); err == nil {
		t.Fatalf("422 beyond the patience: no error")
	}
}

// FuzzParseURL: an accepted URL gives an http(s) base with a host and a
// folder path with slashes at both ends, no dot segments, no query.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"http://h:1/a/b/", "https://[::1]/", "http://h/a/../b", "http://h/%2e%2e/", "http://h/a?b", "ftp://x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		base, folder, err := ParseURL(s)
		if err != nil {
			return
		}
		if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") || strings.HasSuffix(base, "://") {
			t.Fatalf("%q: base %q", s, base)
		}
		if !strings.HasPrefix(folder, "/") || !strings.HasSuffix(folder, "/") || strings.ContainsAny(folder, "?#") {
			t.Fatalf("%q: folder %q", s, folder)
		}
		for _, seg := range strings.Split(strings.Trim(folder, "/"), "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("%q: folder %q has a dot segment", s, folder)
			}
		}
	})
}

func TestRetryAfter(t *testing.T) {
	for in, want := range map[string][2]time.Duration{
		"":      {0, 0},
		"x":     {0, 0},
		"-5":    {0, 0},
		"0":     {0, 0},
		"3":     {3 * time.Second, 3*time.Second + 100*time.Millisecond},
		"99999": {time.Minute, time.Minute + 100*time.Millisecond},
		time.Now().Add(10 * time.Second).UTC().Format(http.TimeFormat): {8 * time.Second, 10*time.Second + 100*time.Millisecond},
		time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat):       {0, 0},
	} {
		if got := retryAfter(in); got < want[0] || got > want[1] {
			t.Errorf("Retry-After %q: %v, want %v to %v", in, got, want[0], want[1])
		}
	}
	for a := range 20 {
		if d := backoff(a); d <= 0 || d > 10*time.Second {
			t.Fatalf("backoff(%d) = %v", a, d)
		}
	}
}

// TestTargetLink: a PATH that is a link to a folder is walked (a walk
// does not follow a link at its top by itself).
func TestTargetLink(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "real", "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "real", "sub", "f"), []byte("x"), 0o644)
	os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link"))
	for _, arg := range []string{filepath.Join(dir, "link"), filepath.Join(dir, "link") + "/"} {
		tg, err := NewTarget(arg)
		if err != nil {
			t.Fatal(err)
		}
		out := make(chan *local, 10)
		walk(context.Background(), []Target{tg}, &Filter{}, out, func(rel string, err error) { t.Errorf("%s: %v", rel, err) })
		close(out)
		var got []string
		for l := range out {
			got = append(got, l.rel)
		}
		want := "real/sub/f"
		if strings.HasSuffix(arg, "/") {
			want = "sub/f"
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s: walked %q, want [%s]", arg, got, want)
		}
	}
}

// TestRunRelocated: once the server has named the upload (another folder
// or name), the client's next handshakes ask there, as u2c.py does.
func TestRunRelocated(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "d"), 0o755)
	os.WriteFile(filepath.Join(src, "d", "f"), []byte("content"), 0o644)
	fs := &fakeServer{t: t, sprs: true, relocate: true, files: map[string]*fakeFile{}, inflight: map[string]int{}}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	tg, _ := NewTarget(filepath.Join(src, "d"))
	sum, err := Run(context.Background(), Options{URL: srv.URL + "/up/", Targets: []Target{tg}})
	if err != nil || sum.Uploaded != 1 {
		t.Fatalf("%v %+v", err, sum)
	}
	if strings.Join(fs.asked, " ") != "/up/d/f /moved/up/d/r-f" {
		t.Fatalf("handshakes %q, want the second at the server's folder and name", fs.asked)
	}
}

// TestRunPostsOnGroups: a file of 1 MiB chunks is posted in runs of whole
// 5-chunk groups (a hoard on S3 puts each straight into a part of the
// file; docs/s3.md, "Parts"): every post but the file's last begins and
// ends on a group.
func TestRunPostsOnGroups(t *testing.T) {
	src := t.TempDir()
	b := make([]byte, 47<<20+3)
	for k := range b {
		b[k] = byte(k*13 + k>>20)
	}
	os.WriteFile(filepath.Join(src, "big"), b, 0o644)
	fs := &fakeServer{t: t, sprs: true, files: map[string]*fakeFile{}, inflight: map[string]int{}}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	tg, err := NewTarget(src)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if sum, err := Run(context.Background(), Options{URL: srv.URL + "/up/", Targets: []Target{tg}, Jobs: 4, PostSize: 16 << 20, JSON: true, Stdout: &out}); err != nil || sum.Failed != 0 {
		t.Fatalf("%v %+v\n%s", err, sum, out.String())
	}
	n := 48 // chunks
	for _, r := range fs.runs {
		if r[0]%5 != 0 || (r[0]+r[1] != n && r[1]%5 != 0) {
			t.Errorf("a post of chunks %d–%d is not made of whole 5-chunk groups", r[0], r[0]+r[1]-1)
		}
	}
}

// TestRunStopsOnSearchRefused: with -s, a server that answers a search
// handshake with 500 (hoard without -e2d) stops the run after the first
// such answer; files in flight are stopped, not failed, and the cause is
// the run's error.
func TestRunStopsOnSearchRefused(t *testing.T) {
	src := t.TempDir()
	for i := range 200 {
		os.WriteFile(filepath.Join(src, fmt.Sprintf("f%03d", i)), []byte(fmt.Sprint(i)), 0o644)
	}
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		hits.Add(1)
		http.Error(w, `{"error":"search is disabled"}`, http.StatusInternalServerError)
	}))
	defer srv.Close()
	tg, err := NewTarget(src)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sum, err := Run(context.Background(), Options{URL: srv.URL + "/", Targets: []Target{tg}, Search: true, Handshakes: 8, JSON: true, Stdout: &out})
	if err == nil || !strings.Contains(err.Error(), "the server cannot search") {
		t.Fatalf("run error %v, want the server cannot search", err)
	}
	if sum.Failed < 1 || sum.Failed > 8 || sum.Failed+sum.Stopped > 200 || sum.Found+sum.NotFound != 0 {
		t.Errorf("failed %d, stopped %d of 200: want the first answers failed, the rest not tried or stopped", sum.Failed, sum.Stopped)
	}
	// Each handshake in flight is tried three times (a 500 may pass):
	// far fewer requests than 200 files × 3.
	if n := hits.Load(); n > 8*3 {
		t.Errorf("%d search requests for 200 files: the run did not stop", n)
	}
	if strings.Contains(out.String(), "canceled") {
		t.Errorf("a file reported as cancelled:\n%s", out.String())
	}
}

// TestRunStopsWhenServerFailsAll: when the server fails every file with
// an error of its own (a 5xx after the retries: a full disk, a broken
// store), the run stops after maxServerFails files in a row instead of
// trying each of the rest; when some files get through, it does not.
func TestRunStopsWhenServerFailsAll(t *testing.T) {
	src := t.TempDir()
	const n = 300
	for i := range n {
		os.WriteFile(filepath.Join(src, fmt.Sprintf("f%03d", i)), []byte(fmt.Sprint("file ", i)), 0o644)
	}
	tg, err := NewTarget(src)
	if err != nil {
		t.Fatal(err)
	}
	fs := &fakeServer{t: t, files: map[string]*fakeFile{}, inflight: map[string]int{}}
	var hs atomic.Int64
	var failOdd atomic.Bool // the server's goroutines read it
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		if q.Header.Get("X-Up2k-Hash") == "" || q.Header.Get(up2k.OneShotHeader) != "" {
			hs.Add(1)
			b, _ := io.ReadAll(q.Body)
			var h struct{ Name string }
			json.Unmarshal(b, &h)
			var k int
			fmt.Sscanf(h.Name, "f%d", &k)
			if !failOdd.Load() || k%2 == 1 {
				http.Error(w, `{"error":"disk full: 0 B free"}`, http.StatusInternalServerError)
				return
			}
			q.Body = io.NopCloser(bytes.NewReader(b))
		}
		fs.ServeHTTP(w, q)
	}))
	defer srv.Close()

	var out bytes.Buffer
	sum, err := Run(context.Background(), Options{URL: srv.URL + "/up/", Targets: []Target{tg}, JSON: true, Stdout: &out})
	if err == nil || !strings.Contains(err.Error(), "failed on the server's side") || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("every file refused: run error %v, want the stop naming the last error", err)
	}
	if sum.Failed < maxServerFails || sum.Failed+sum.Stopped >= n || sum.Uploaded != 0 {
		t.Errorf("every file refused: %d failed, %d stopped, %d uploaded of %d", sum.Failed, sum.Stopped, sum.Uploaded, n)
	}
	if got := hs.Load(); got > 3*(maxServerFails+40) {
		t.Errorf("every file refused: %d handshakes for %d files: the run did not stop", got, n)
	}

	failOdd.Store(true)
	hs.Store(0)
	out.Reset()
	sum, err = Run(context.Background(), Options{URL: srv.URL + "/up/", Targets: []Target{tg}, JSON: true, Stdout: &out})
	if err != nil || sum.Failed != n/2 || sum.Uploaded != n/2 || sum.Stopped != 0 {
		t.Errorf("every other file refused: err %v, %d failed, %d uploaded, %d stopped; want the run to go on to the end", err, sum.Failed, sum.Uploaded, sum.Stopped)
	}
}
