package e2e

// End-to-end tests of refused uploads: each checks the status, a message
// naming the problem, and that nothing on disk was created or changed
// (no stray .hoard-*.PARTIAL work files either).

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// wantRefused checks a refusal: status, the body naming each of words
// (case-insensitive), plain text, and an unchanged volume.
func wantRefused(t *testing.T, resp *http.Response, body []byte, status int, words []string, dir string, before map[string]string) {
	t.Helper()
	wantStatus(t, resp, body, status)
	low := strings.ToLower(string(body))
	for _, w := range words {
		if !strings.Contains(low, strings.ToLower(w)) {
			t.Errorf("error body: got %q, want it to mention %q", body, w)
		}
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("error Content-Type: got %q, want text/plain", ct)
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		t.Errorf("Location on a refusal: got %q, want none", loc)
	}
	if status == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("WWW-Authenticate on 401: got none, want a Basic challenge")
	}
	wantSameSnapshot(t, before, snapshot(t, dir))
	wantNoPartial(t, dir)
}

func TestUploadBadShortBody(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rwd")
	writeFile(t, dir, "keep.txt", []byte("precious\n"))
	writeFile(t, dir, "sub/keep2.txt", []byte("also precious\n"))
	host := strings.TrimPrefix(s.URL, "http://")
	cases := []struct{ name, target string }{
		{name: "new file", target: "/short.bin"},
		{name: "new file in an existing folder", target: "/sub/short.bin"},
		{name: "new file in a missing folder", target: "/newdir/deeper/short.bin"},
		{name: "replace keeps the old file", target: "/keep.txt?replace"},
		{name: "append keeps the old file", target: "/keep.txt?apnd"},
		{name: "gz", target: "/short.txt?gz"},
		{name: "xz", target: "/short.txt?xz"},
		{name: "json reply requested", target: "/short.bin?j"},
		{name: "trailing slash (generated name)", target: "/sub/"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(t, dir)
			raw := fmt.Sprintf("PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\n0123456789", c.target, host)
			resp, body := sendRaw(t, s, []byte(raw))
			wantRefused(t, resp, body, http.StatusBadRequest, []string{"ended before"}, dir, before)
		})
	}
	// A chunked body cut off before its last (zero-length) chunk is just
	// as incomplete as a short Content-Length body.
	t.Run("chunked body without its final chunk", func(t *testing.T) {
		before := snapshot(t, dir)
		raw := "PUT /cut.bin HTTP/1.1\r\nHost: " + host + "\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n"
		resp, body := sendRaw(t, s, []byte(raw))
		wantRefused(t, resp, body, http.StatusBadRequest, []string{"ended before"}, dir, before)
	})
	t.Run("chunked append without its final chunk", func(t *testing.T) {
		before := snapshot(t, dir)
		raw := "PUT /keep.txt?apnd HTTP/1.1\r\nHost: " + host + "\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n"
		resp, body := sendRaw(t, s, []byte(raw))
		wantRefused(t, resp, body, http.StatusBadRequest, []string{"ended before"}, dir, before)
	})
	wantFile(t, dir, "keep.txt", []byte("precious\n"))
}

func TestUploadBadParams(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rwd")
	writeFile(t, dir, "exists.txt", []byte("x\n"))
	data := []byte("some upload body\n")
	allCK := []string{"sha512", "no", "md5", "sha1", "sha256", "b2", "b2s"}
	cases := []struct {
		name, path string
		hdr        []string
		status     int
		words      []string
	}{
		{name: "unknown ck", path: "/a.txt?ck=crc32", hdr: nil, status: 400, words: append([]string{"crc32"}, allCK...)},
		{name: "unknown CK header", path: "/a.txt", hdr: []string{"CK: sha3"}, status: 400, words: append([]string{"sha3"}, allCK...)},
		{name: "gz=10", path: "/a.txt?gz=10", hdr: nil, status: 400, words: []string{"gz", "0 to 9"}},
		{name: "gz=-1", path: "/a.txt?gz=-1", hdr: nil, status: 400, words: []string{"gz", "0 to 9"}},
		{name: "gz=abc", path: "/a.txt?gz=abc", hdr: nil, status: 400, words: []string{"gz", "0 to 9"}},
		{name: "xz=abc", path: "/a.txt?xz=abc", hdr: nil, status: 400, words: []string{"xz", "0 to 9"}},
		{name: "xz=10", path: "/a.txt?xz=10", hdr: nil, status: 400, words: []string{"xz", "0 to 9"}},
		{name: "gz and xz together", path: "/a.txt?gz&xz", hdr: nil, status: 400, words: []string{"gz", "xz"}},
		{name: "gz=1 and xz=1 together", path: "/a.txt?xz=1&gz=1", hdr: nil, status: 400, words: []string{"gz", "xz"}},
		{name: "rand=0", path: "/a.txt?rand=0", hdr: nil, status: 400, words: []string{"rand"}},
		{name: "rand=-3", path: "/a.txt?rand=-3", hdr: nil, status: 400, words: []string{"rand"}},
		{name: "rand=abc", path: "/a.txt?rand=abc", hdr: nil, status: 400, words: []string{"rand"}},
		{name: "rand=999", path: "/a.txt?rand=999", hdr: nil, status: 400, words: []string{"rand"}},
		{name: "Rand header abc", path: "/a.txt", hdr: []string{"Rand: abc"}, status: 400, words: []string{"rand"}},
		{name: "life=abc", path: "/a.txt?life=abc", hdr: nil, status: 400, words: []string{"life"}},
		{name: "life=-5", path: "/a.txt?life=-5", hdr: nil, status: 400, words: []string{"life"}},
		{name: "Life header abc", path: "/a.txt", hdr: []string{"Life: abc"}, status: 400, words: []string{"life"}},
		{name: "life without a volume lifetime", path: "/a.txt?life=5", hdr: nil, status: 400, words: []string{"lifetime"}},
		{name: "Life header without a volume lifetime", path: "/a.txt", hdr: []string{"Life: 5"}, status: 400, words: []string{"lifetime"}},
		{name: "replace and apnd together", path: "/exists.txt?replace&apnd", hdr: nil, status: 400, words: []string{"replace", "apnd"}},
		{name: "want=xml", path: "/a.txt?want=xml", hdr: nil, status: 400, words: []string{"want"}},
		{name: "name ending in .PARTIAL", path: "/x.PARTIAL", hdr: nil, status: 400, words: []string{".PARTIAL"}},
		{name: "name ending in .PARTIAL in a missing folder", path: "/nd/y.PARTIAL", hdr: nil, status: 400, words: []string{".PARTIAL"}},
		{name: "PUT into /.hist", path: "/.hist/x", hdr: nil, status: 403, words: []string{"reserved"}},
		{name: "PUT into /.HIST (case-insensitive)", path: "/.HIST/x", hdr: nil, status: 403, words: []string{"reserved"}},
		{name: "PUT onto /.hist itself", path: "/.hist", hdr: nil, status: 403, words: []string{"reserved"}},
		{name: "a file used as a folder", path: "/exists.txt/inner.txt", hdr: nil, status: 400, words: []string{"folder"}},
		{name: "path with ..", path: "/a/../../etc/x", hdr: nil, status: 400, words: []string{".."}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(t, dir)
			resp, body := s.do(t, "PUT", c.path, data, c.hdr...)
			wantRefused(t, resp, body, c.status, c.words, dir, before)
		})
	}
	// The same modifiers on a multipart upload.
	mpCases := []struct {
		name, query string
		words       []string
	}{
		{name: "multipart unknown ck", query: "?ck=nope", words: []string{"nope", "sha512"}},
		{name: "multipart bad rand", query: "?rand=abc", words: []string{"rand"}},
		{name: "multipart bad life", query: "?life=-5", words: []string{"life"}},
		{name: "multipart life without lifetime", query: "?life=5", words: []string{"lifetime"}},
		{name: "multipart gz", query: "?gz", words: []string{"gz"}},
		{name: "multipart apnd", query: "?apnd", words: []string{"apnd"}},
	}
	for _, c := range mpCases {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(t, dir)
			form, ct := multipartForm(t, formPart{"f", "m.txt", data})
			resp, body := s.do(t, "POST", "/mp/"+c.query, form, ct)
			wantRefused(t, resp, body, 400, c.words, dir, before)
		})
	}
}

func TestUploadBadHeaders(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rw")
	host := strings.TrimPrefix(s.URL, "http://")
	cases := []struct {
		name string
		hdr  string
	}{
		{name: "one 80 KiB header", hdr: "X-Big: " + strings.Repeat("a", 80<<10) + "\r\n"},
		{name: "3000 small headers", hdr: strings.Repeat("X-Many: 0123456789012345678901234567890\r\n", 3000)},
		{name: "1 MiB header", hdr: "X-Huge: " + strings.Repeat("b", 1<<20) + "\r\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(t, dir)
			raw := "PUT /hdr.bin HTTP/1.1\r\nHost: " + host + "\r\n" + c.hdr + "Content-Length: 5\r\n\r\nhello"
			resp, body := sendRaw(t, s, []byte(raw))
			wantRefused(t, resp, body, http.StatusRequestHeaderFieldsTooLarge, []string{"header"}, dir, before)
		})
	}
}

func TestUploadBadAuth(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-a", "ed:edpass", "-a", "ro:ropass", "-v", dir+"::r:rw,ed")
	data := []byte("unwanted\n")
	form, ct := multipartForm(t, formPart{"f", "m.txt", data})
	basic := func(up string) string {
		return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(up))
	}
	cases := []struct {
		name, method, path string
		body               []byte
		hdr                []string
		status             int
		words              []string
	}{
		{name: "PUT anonymous without w", method: "PUT", path: "/a.txt", body: data, hdr: nil, status: 401, words: []string{"password"}},
		{name: "PUT with a valid password but no w", method: "PUT", path: "/a.txt", body: data, hdr: []string{"PW: ropass"}, status: 403, words: []string{"ro", "upload"}},
		{name: "PUT with ?pw= valid but no w", method: "PUT", path: "/a.txt?pw=ropass", body: data, hdr: nil, status: 403, words: []string{"upload"}},
		{name: "PUT with basic auth valid but no w", method: "PUT", path: "/a.txt", body: data, hdr: []string{basic("ro:ropass")}, status: 403, words: []string{"upload"}},
		{name: "PUT with a wrong PW header", method: "PUT", path: "/a.txt", body: data, hdr: []string{"PW: nope"}, status: 401, words: []string{"wrong password"}},
		{name: "PUT with a wrong ?pw=", method: "PUT", path: "/a.txt?pw=nope", body: data, hdr: nil, status: 401, words: []string{"wrong password"}},
		{name: "multipart anonymous without w", method: "POST", path: "/", body: form, hdr: []string{ct}, status: 401, words: []string{"password"}},
		{name: "multipart with a valid password but no w", method: "POST", path: "/sub/", body: form, hdr: []string{ct, "PW: ropass"}, status: 403, words: []string{"upload"}},
		{name: "multipart with wrong basic auth", method: "POST", path: "/", body: form, hdr: []string{ct, basic("ed:wrong")}, status: 401, words: []string{"wrong password"}},
		{name: "PUT replace by a user with w but no d", method: "PUT", path: "/a.txt?replace", body: data, hdr: []string{"PW: edpass"}, status: 403, words: []string{"delete"}},
		{name: "PUT apnd by a user with w but no d", method: "PUT", path: "/a.txt?apnd", body: data, hdr: []string{"PW: edpass"}, status: 403, words: []string{"delete"}},
		{name: "multipart replace by a user with w but no d", method: "POST", path: "/?replace", body: form, hdr: []string{ct, "PW: edpass"}, status: 403, words: []string{"delete"}},
		{name: "multipart Replace header by a user with w but no d", method: "POST", path: "/", body: form, hdr: []string{ct, "PW: edpass", "Replace: 1"}, status: 403, words: []string{"delete"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(t, dir)
			resp, body := s.do(t, c.method, c.path, c.body, c.hdr...)
			wantRefused(t, resp, body, c.status, c.words, dir, before)
		})
	}
	t.Run("control: the user with w may upload", func(t *testing.T) {
		resp, body := s.do(t, "PUT", "/ok.txt", data, "PW: edpass")
		wantStatus(t, resp, body, http.StatusCreated)
		wantFile(t, dir, "ok.txt", data)
	})
}

func TestUploadBadMultipart(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rw")
	writeFile(t, dir, "afile.txt", []byte("file\n"))
	good := []byte("good file\n")
	type tc struct {
		name, path string
		body       []byte
		ct         string
		words      []string
	}
	form := func(parts ...formPart) ([]byte, string) { return multipartForm(t, parts...) }
	var cases []tc
	add := func(name, path string, words []string, parts ...formPart) {
		b, ct := form(parts...)
		cases = append(cases, tc{name, path, b, ct, words})
	}
	add("only act=bput, no file", "/m/", []string{"no file"}, formPart{"act", "", []byte("bput")})
	add("no parts at all", "/m/", []string{"no file"})
	add("bad first field", "/m/", []string{"act", "foo"}, formPart{"foo", "", []byte("bar")}, formPart{"f", "x.txt", good})
	add("field f without a filename first", "/m/", []string{"act"}, formPart{"f", "", []byte("not a file")})
	add("unknown act", "/m/", []string{"action", "mkdirx"}, formPart{"act", "", []byte("mkdirx")}, formPart{"f", "x.txt", good})
	add("file name ending in .PARTIAL", "/m/", []string{".PARTIAL"}, formPart{"f", "x.PARTIAL", good})
	add("file name ..", "/m/", []string{"name"}, formPart{"f", "..", good})
	add("into /.hist", "/.hist/", []string{"reserved"}, formPart{"f", "x.txt", good})
	add("to a file instead of a folder", "/afile.txt", []string{"folder"}, formPart{"f", "x.txt", good})
	b, _ := form(formPart{"f", "x.txt", good})
	cases = append(cases,
		tc{"no boundary in Content-Type", "/m/", b, "Content-Type: multipart/form-data", []string{"multipart"}},
		tc{"truncated body (no closing boundary)", "/m/", b[:bytes.Index(b, good)+4], "", []string{"ended before"}},
		tc{"garbage body", "/m/", []byte("this is not multipart at all"), "", []string{"no file"}},
	)
	// The last two use b's boundary ("--<boundary>\r\n" opens b).
	for i := range cases {
		if cases[i].ct == "" {
			cases[i].ct = "Content-Type: multipart/form-data; boundary=" + string(b[2:bytes.IndexByte(b, '\r')])
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(t, dir)
			status := http.StatusBadRequest
			if strings.Contains(c.name, ".hist") {
				status = http.StatusForbidden
			}
			resp, body := s.do(t, "POST", c.path, c.body, c.ct)
			wantRefused(t, resp, body, status, c.words, dir, before)
		})
	}
	t.Run("error part after a stored file keeps and lists it", func(t *testing.T) {
		b, ct := form(formPart{"f", "kept.txt", good}, formPart{"f", "bad.PARTIAL", good}, formPart{"f", "never.txt", good})
		resp, body := s.do(t, "POST", "/keep/?j", b, ct)
		wantStatus(t, resp, body, http.StatusBadRequest)
		var r multipartReply
		decodeJSONKeys(t, body, &r)
		if r.Status != "ERROR" || !strings.Contains(r.Error, ".PARTIAL") {
			t.Errorf("status, error: got %q, %q, want ERROR and a message naming .PARTIAL", r.Status, r.Error)
		}
		if len(r.Files) != 1 || r.Files[0].Fn != "kept.txt" {
			t.Errorf("files: got %+v, want only kept.txt", r.Files)
		}
		wantFile(t, dir, "keep/kept.txt", good)
		for _, p := range []string{"keep/bad.PARTIAL", "keep/never.txt"} {
			if pathExists(dir, p) {
				t.Errorf("%s: got stored, want not stored", p)
			}
		}
		wantNoPartial(t, dir)
	})
}

func TestUploadBadSizeLimits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rw:c,sz=1k-2k")
	type tc struct {
		name, path string
		n          int
		chunked    bool
		mp         bool
		status     int
	}
	cases := []tc{
		{"too small with Content-Length", "/s.bin", 10, false, false, 400},
		{"too big with Content-Length", "/b.bin", 3000, false, false, 413},
		{"much too big with Content-Length", "/b.bin", 5 << 20, false, false, 413},
		{"too small chunked", "/s.bin", 10, true, false, 400},
		{"too big chunked", "/b.bin", 3000, true, false, 413},
		{"much too big chunked", "/b.bin", 3 << 20, true, false, 413},
		{"too big chunked into a missing folder", "/nf/b.bin", 3000, true, false, 413},
		{"one byte over, chunked", "/b.bin", 2049, true, false, 413},
		{"one byte under, Content-Length", "/s.bin", 1023, false, false, 400},
		{"multipart too big", "/mp/", 3000, false, true, 413},
		{"multipart too small", "/mp/", 10, false, true, 400},
		{"empty file", "/e.bin", 0, false, false, 400},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := seededBytes(uint64(400+i), c.n)
			before := snapshot(t, dir)
			var resp *http.Response
			var body []byte
			switch {
			case c.mp:
				b, ct := multipartForm(t, formPart{"f", "m.bin", data})
				resp, body = s.do(t, "POST", c.path, b, ct)
			case c.chunked:
				resp, body = doChunked(t, s, "PUT", c.path, data)
			default:
				resp, body = s.do(t, "PUT", c.path, data)
			}
			word := "too big"
			if c.status == 400 {
				word = "too small"
			}
			wantRefused(t, resp, body, c.status, []string{word, "1024", "2048"}, dir, before)
		})
	}
	for _, n := range []int{1024, 1500, 2048} {
		t.Run(fmt.Sprintf("control: %d bytes fit", n), func(t *testing.T) {
			data := seededBytes(uint64(n), n)
			resp, body := doChunked(t, s, "PUT", fmt.Sprintf("/ok%d.bin", n), data)
			wantStatus(t, resp, body, http.StatusCreated)
			wantFile(t, dir, fmt.Sprintf("ok%d.bin", n), data)
			resp, body = s.do(t, "PUT", fmt.Sprintf("/okcl%d.bin", n), data)
			wantStatus(t, resp, body, http.StatusCreated)
			wantFile(t, dir, fmt.Sprintf("okcl%d.bin", n), data)
		})
	}
}

// TestLifeBeyondVolume: a life longer than the volume's lifetime means
// the volume's (copyparty ignores it), however long: one of more than
// 292 years overflowed a time.Duration, and the upload then failed only
// at its end (a negative life: 400 on the last chunk, the session stuck)
// or got a life nobody asked for.
func TestLifeBeyondVolume(t *testing.T) {
	t.Parallel()
	s := start(t, "-v", t.TempDir()+"::rwd:c,lifetime=60")
	for _, life := range []string{"10000000000", "1099511627776"} {
		resp, body := s.do(t, "PUT", "/put-"+life+".txt?life="+life, []byte("x"))
		wantStatus(t, resp, body, http.StatusCreated)
		f := newUp2kFile(seededBytes(uint64(len(life)), 3000))
		rep := up2kHandshake(t, s, "/", "up-"+life+".bin", f, 1700000000, map[string]any{"life": json.Number(life)})
		postChunk(t, s, rep, f, 0)
		for _, p := range []string{"/put-" + life + ".txt", "/up-" + life + ".bin"} {
			resp, body := s.do(t, "GET", p, nil)
			wantStatus(t, resp, body, http.StatusOK)
		}
	}
}
