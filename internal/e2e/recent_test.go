package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

type upsBody struct {
	F []struct {
		At int64  `json:"at"`
		Vp string `json:"vp"`
		Pd *int   `json:"pd"`
		Sz int64  `json:"sz"`
	} `json:"f"`
	Nu int `json:"nu"`
	Nc int `json:"nc"`
}

type ruBody struct {
	Now    int64  `json:"now"`
	Filter string `json:"filter"`
	Ups    []struct {
		Vp string `json:"vp"`
		Sz int64  `json:"sz"`
		IP string `json:"ip"`
		At int64  `json:"at"`
		Un string `json:"un"`
	} `json:"ups"`
}

func upsPaths(t *testing.T, s *server, q string, hdr ...string) []string {
	t.Helper()
	resp, body := s.do(t, "GET", "/?ups"+q, nil, hdr...)
	wantStatus(t, resp, body, 200)
	var b upsBody
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	out := []string{}
	for _, f := range b.F {
		out = append(out, f.Vp)
	}
	if b.Nu+b.Nc != len(out) {
		t.Fatalf("nu %d + nc %d, %d rows", b.Nu, b.Nc, len(out))
	}
	return out
}

func ruPaths(t *testing.T, s *server, q string, hdr ...string) ([]string, ruBody) {
	t.Helper()
	resp, body := s.do(t, "GET", "/?ru&j"+q, nil, hdr...)
	wantStatus(t, resp, body, 200)
	var b ruBody
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	out := []string{}
	for _, u := range b.Ups {
		out = append(out, u.Vp)
	}
	return out, b
}

func TestRecentUploads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "pub"), 0o755)
	s := start(t, "-a", "boss:bpw", "-a", "u1:p1", "-v", dir+"::A,boss:rw,u1", "-v", filepath.Join(dir, "pub")+":pub:rw:A,boss")
	put := func(path, body string, hdr ...string) {
		t.Helper()
		resp, b := s.do(t, "PUT", path, []byte(body), hdr...)
		wantStatus(t, resp, b, 201)
	}
	put("/pub/anon.txt", "a")
	put("/pub/u1.txt", "bb", "PW: p1")
	put("/pub/boss.txt", "ccc", "PW: bpw")
	put("/pub/x.(y)*[z]+.txt", "dddd")
	put("/u1-home.txt", "e", "PW: p1")

	if got := upsPaths(t, s, ""); !slices.Equal(got, []string{"/pub/x.(y)*%5Bz%5D+.txt", "/pub/anon.txt"}) {
		t.Fatalf("anonymous ?ups: %v", got)
	}
	if got := upsPaths(t, s, "", "PW: p1"); !slices.Equal(got, []string{"/u1-home.txt", "/pub/u1.txt"}) {
		t.Fatalf("u1 ?ups: %v", got)
	}
	if got := upsPaths(t, s, "&filter=HOME", "PW: p1"); !slices.Equal(got, []string{"/u1-home.txt"}) {
		t.Fatalf("u1 ?ups filter: %v", got)
	}

	// ?ru: admins only.
	resp, body := s.do(t, "GET", "/?ru", nil)
	wantStatus(t, resp, body, 401)
	resp, body = s.do(t, "GET", "/?ru&j", nil, "PW: p1")
	wantStatus(t, resp, body, 403)
	got, b := ruPaths(t, s, "", "PW: bpw")
	if len(got) != 5 || got[0] != "/u1-home.txt" || got[4] != "/pub/anon.txt" {
		t.Fatalf("?ru: %v", got)
	}
	for _, u := range b.Ups {
		if u.IP != "127.0.0.1" || u.At < time.Now().Unix()-60 || u.Sz < 1 {
			t.Fatalf("row %+v", u)
		}
	}
	if b.Ups[1].Un != "*" || b.Ups[2].Un != "boss" || b.Ups[0].Un != "u1" {
		t.Fatalf("users: %+v", b.Ups)
	}
	// filter= is literal text (regex metacharacters mean themselves),
	// case-insensitive, with ^ and $ anchors.
	for _, tc := range []struct {
		f    string
		want []string
	}{
		{f: "u1", want: []string{"/u1-home.txt", "/pub/u1.txt"}},
		{f: "U1.TXT", want: []string{"/pub/u1.txt"}},
		{f: ".(y)*[z]+", want: []string{"/pub/x.(y)*%5Bz%5D+.txt"}},
		{f: ".*", want: []string{}},
		{f: "[", want: []string{"/pub/x.(y)*%5Bz%5D+.txt"}},
		{f: "^/pub/a", want: []string{"/pub/anon.txt"}},
		{f: "boss.txt$", want: []string{"/pub/boss.txt"}},
		{f: "^/pub/boss.txt$", want: []string{"/pub/boss.txt"}},
		{f: "^/pub$", want: []string{}},
		{f: "\\", want: []string{}},
	} {
		got, b := ruPaths(t, s, "&filter="+url.QueryEscape(tc.f), "PW: bpw")
		if !slices.Equal(got, tc.want) || b.Filter != tc.f {
			t.Errorf("filter %q: %v (echo %q), want %v", tc.f, got, b.Filter, tc.want)
		}
	}
	// The HTML form escapes what it shows and runs no script.
	resp, body = s.do(t, "GET", "/?ru&filter="+url.QueryEscape(`"><script>x</script>`), nil, "PW: bpw")
	wantStatus(t, resp, body, 200)
	if strings.Contains(string(body), "<script>") || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("HTML ?ru: %s", body)
	}
	resp, body = s.do(t, "GET", "/?ru", nil, "PW: bpw")
	if !strings.Contains(string(body), "boss.txt") || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("HTML ?ru: %s", body)
	}
}

func TestRecentUploadsRingBound(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-a", "boss:bpw", "-v", dir+"::rw:A,boss", "--ups-ring", "3")
	for _, n := range []string{"1", "2", "3", "4", "5"} {
		resp, b := s.do(t, "PUT", "/f"+n, []byte(n))
		wantStatus(t, resp, b, 201)
	}
	got, _ := ruPaths(t, s, "", "PW: bpw")
	if !slices.Equal(got, []string{"/f5", "/f4", "/f3"}) {
		t.Fatalf("ring of 3: %v", got)
	}
}

func TestActiveDownloads(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-a", "boss:bpw", "-a", "u1:p1", "-v", dir+"::r:A,boss")
	const size = 64 << 20
	f, _ := os.Create(filepath.Join(dir, "big.bin"))
	f.Truncate(size)
	f.Close()
	writeFile(t, dir, "small.txt", []byte("small"))

	resp, body := s.do(t, "GET", "/?dls", nil)
	wantStatus(t, resp, body, 401)
	resp, body = s.do(t, "GET", "/?dls", nil, "PW: p1")
	wantStatus(t, resp, body, 403)
	if rows := dlsGet(t, s, "PW: bpw"); len(rows) != 0 {
		t.Fatalf("idle server lists %v", rows)
	}
	// A download the client reads slowly stays listed while it runs.
	req, _ := http.NewRequest("GET", s.URL+"/big.bin", nil)
	req.Header.Set("PW", "p1")
	dl, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Body.Close()
	rows := dlsGet(t, s, "PW: bpw")
	if len(rows) != 1 || rows[0].Path != "/big.bin" || rows[0].Size != size || rows[0].Uname != "u1" || !strings.HasPrefix(rows[0].Conn, "127.0.0.1:") || rows[0].Sent > size {
		t.Fatalf("rows %+v", rows)
	}
	// Progress shows as the client reads.
	if _, err := io.CopyN(io.Discard, dl.Body, 40<<20); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		rows = dlsGet(t, s, "PW: bpw")
		if len(rows) == 1 && rows[0].Sent >= 24<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no progress: %+v", rows)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if rows[0].Rate <= 0 || rows[0].Dur <= 0 {
		t.Fatalf("rate/duration: %+v", rows[0])
	}
	// Finished downloads leave the list.
	n, err := io.Copy(io.Discard, dl.Body)
	if err != nil || n != size-40<<20 {
		t.Fatalf("rest of the body: %d %v", n, err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for len(dlsGet(t, s, "PW: bpw")) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the finished download is still listed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Small files are not tracked at all; tails are, with size 0.
	resp, body = s.do(t, "GET", "/small.txt", nil)
	wantStatus(t, resp, body, 200)
	if rows := dlsGet(t, s, "PW: bpw"); len(rows) != 0 {
		t.Fatalf("small download listed: %+v", rows)
	}
	tr := startTail(t, s, "/small.txt?tail&pw=p1")
	tr.waitLen(t, 5, 5*time.Second)
	rows = dlsGet(t, s, "PW: bpw")
	if len(rows) != 1 || rows[0].Path != "/small.txt" || rows[0].Size != 0 || rows[0].Sent != 5 || rows[0].Uname != "u1" {
		t.Fatalf("tail in ?dls: %+v", rows)
	}
	tr.resp.Body.Close()

	// Archives are listed too, with their format and no size.
	req, _ = http.NewRequest("GET", s.URL+"/?tar", nil)
	req.Header.Set("PW", "p1")
	ar, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer ar.Body.Close()
	if _, err := io.CopyN(io.Discard, ar.Body, 20<<20); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for {
		rows = dlsGet(t, s, "PW: bpw")
		if len(rows) == 1 && rows[0].Path == "/ :tar" && rows[0].Size == 0 && rows[0].Sent >= 16<<20 && rows[0].Uname == "u1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("archive in ?dls: %+v", rows)
		}
		time.Sleep(50 * time.Millisecond)
	}
	io.Copy(io.Discard, ar.Body)
}

// TestRecentUploadsIndexed: with -e2d, ?ups and ?ru read the index, so
// uploads are still listed after a restart (the in-memory ring starts
// empty) and the ring's size no longer bounds them. (Removals leave the
// index with the file's record: TestSearchFollows.)
func TestRecentUploadsIndexed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"-a", "boss:bpw", "-a", "u1:p1", "-v", dir + "::w:rwd,u1:A,boss", "-e2d", "--ups-ring", "1"}
	s := start(t, args...)
	for _, f := range []struct{ path, body, pw string }{
		{path: "/a/one.txt", body: "1", pw: "PW: p1"}, {path: "/a/two.txt", body: "22", pw: ""}, {path: "/three.txt", body: "333", pw: "PW: p1"},
	} {
		var hdr []string
		if f.pw != "" {
			hdr = append(hdr, f.pw)
		}
		resp, b := s.do(t, "PUT", f.path, []byte(f.body), hdr...)
		wantStatus(t, resp, b, 201)
		time.Sleep(1100 * time.Millisecond) // distinct upload seconds: a stable newest-first order
	}
	// Indexing is asynchronous: wait until the index holds the uploads.
	waitHits(t, s, "txt", []string{"/a/one.txt", "/a/two.txt", "/three.txt"}, "PW: bpw")
	if err := s.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	s = start(t, args...)
	got, ru := ruPaths(t, s, "", "PW: bpw")
	if !slices.Equal(got, []string{"/three.txt", "/a/two.txt", "/a/one.txt"}) {
		t.Fatalf("?ru after a restart: %v, want the three uploads newest first", got)
	}
	for _, u := range ru.Ups {
		if u.IP == "" || u.At == 0 {
			t.Errorf("?ru row without address or time: %+v", u)
		}
		if want := map[bool]string{true: "*", false: "u1"}[u.Vp == "/a/two.txt"]; u.Un != want {
			t.Errorf("?ru row %s: uploader %q", u.Vp, u.Un)
		}
	}
	if got := upsPaths(t, s, "", "PW: p1"); !slices.Equal(got, []string{"/three.txt", "/a/one.txt"}) {
		t.Fatalf("u1's ?ups after a restart: %v", got)
	}
}

// ?ups lists the requester's unfinished up2k uploads first, with how much
// of each is done; someone else's are not shown, and a finished upload
// moves to the completed part.
func TestRecentUploadsUnfinished(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, "-a", "u1:p1", "-v", dir+"::rw:rw,u1")
	f := newUp2kFile(randomBytes(3 << 20)) // three 1 MiB chunks
	rep := up2kHandshake(t, s, "/up/", "big file.bin", f, 1700000000, nil)
	postChunk(t, s, rep, f, 0)
	other := newUp2kFile(randomBytes(2 << 20))
	up2kHandshake(t, s, "/up/", "theirs.bin", other, 1700000000, nil, "PW: p1")

	ups := func(hdr ...string) upsBody {
		t.Helper()
		resp, body := s.do(t, "GET", "/?ups", nil, hdr...)
		wantStatus(t, resp, body, 200)
		var b upsBody
		if err := json.Unmarshal(body, &b); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		return b
	}
	b := ups()
	if b.Nu != 1 || b.Nc != 0 || len(b.F) != 1 {
		t.Fatalf("anonymous ?ups during the upload: %+v", b)
	}
	if r := b.F[0]; r.Vp != "/up/big%20file.bin" || r.Sz != 3<<20 || r.Pd == nil || *r.Pd != 33 || r.At < time.Now().Unix()-60 {
		t.Fatalf("unfinished row %+v (pd %v)", r, r.Pd)
	}
	if b := ups("PW: p1"); b.Nu != 1 || b.F[0].Vp != "/up/theirs.bin" || *b.F[0].Pd != 0 {
		t.Fatalf("u1's ?ups: %+v", b)
	}
	postChunk(t, s, rep, f, 1)
	postChunk(t, s, rep, f, 2)
	b = ups()
	if b.Nu != 0 || b.Nc != 1 || len(b.F) != 1 || b.F[0].Pd != nil || b.F[0].Vp != "/up/big%20file.bin" {
		t.Fatalf("anonymous ?ups after the upload: %+v", b)
	}
}

// TestRecentUploadsUnpostWindow: ?ups lists completed uploads only while
// their uploader may still unpost them (--unpost, copyparty's rule), and
// none with --unpost 0. Uploaders are told apart by account and address
// only, so anonymous uploaders behind one address (a NAT, a proxy) see
// each other's: the window bounds that, and turning unpost off ends it.
func TestRecentUploadsUnpostWindow(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		unpost string
		wait   time.Duration
	}{{"0", 0}, {"1", 2100 * time.Millisecond}} {
		dir := t.TempDir()
		s := start(t, "-v", dir+"::w", "--unpost", c.unpost)
		resp, b := s.do(t, "PUT", "/drop.txt", []byte("secret name"))
		wantStatus(t, resp, b, 201)
		if c.wait > 0 {
			if got := upsPaths(t, s, ""); !slices.Equal(got, []string{"/drop.txt"}) {
				t.Fatalf("--unpost %s: ?ups inside the window: %v", c.unpost, got)
			}
			time.Sleep(c.wait)
		}
		if got := upsPaths(t, s, ""); len(got) != 0 {
			t.Fatalf("--unpost %s: ?ups lists %v after the window", c.unpost, got)
		}
	}
}
