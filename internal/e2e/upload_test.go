package e2e

// End-to-end tests of PUT and multipart uploads: reply forms, checksums,
// compression, replace/collision/append, random names, lifetimes, paths,
// chunked bodies. Refused uploads are in upload_bad_test.go. Helpers here
// are prefixed "up" so that they cannot clash with other test files.

import (
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ulikunitz/xz"
	"golang.org/x/crypto/blake2b"
	"golang.org/x/crypto/blake2s"
)

// ---- helpers -------------------------------------------------------------

// digestOf computes checksum ck of data independently of the server.
func digestOf(t *testing.T, ck string, data []byte) []byte {
	t.Helper()
	switch ck {
	case "", "sha512":
		s := sha512.Sum512(data)
		return s[:]
	case "md5":
		s := md5.Sum(data)
		return s[:]
	case "sha1":
		s := sha1.Sum(data)
		return s[:]
	case "sha256":
		s := sha256.Sum256(data)
		return s[:]
	case "b2", "blake2":
		s := blake2b.Sum512(data)
		return s[:]
	case "b2s", "blake2s":
		s := blake2s.Sum256(data)
		return s[:]
	}
	t.Fatalf("test bug: no digest for ck %q", ck)
	return nil
}

// checksums is a checksum in the three encodings an upload reply uses.
type checksums struct {
	full  string // URL-safe base64 (padded) of the whole digest: JSON "sha512"
	b64   string // URL-safe base64 of the first 33 bytes: "sha_b64", text line 2
	hex56 string // lowercase hex cut to 56 characters: text line 3
}

func checksumsOf(t *testing.T, ck string, data []byte) checksums {
	t.Helper()
	d := digestOf(t, ck, data)
	h := hex.EncodeToString(d)
	if len(h) > 56 {
		h = h[:56]
	}
	return checksums{
		full:  base64.URLEncoding.EncodeToString(d),
		b64:   base64.URLEncoding.EncodeToString(d[:min(33, len(d))]),
		hex56: h,
	}
}

// compressibleText returns n bytes of compressible text.
func compressibleText(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %d of a compressible upload body; hoard stores it\n", i%977)
	}
	return b.Bytes()[:n]
}

// checkPutJSON checks a PUT's JSON reply against the uploaded data.
func checkPutJSON(t *testing.T, body []byte, ck string, data []byte, wantURL string) putReply {
	t.Helper()
	var r putReply
	keys := decodeJSONKeys(t, body, &r)
	for _, k := range []string{"url", "size", "upload_time", "fileurl", "filesz", "ck"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("JSON key %q: got absent, want present; reply %s", k, body)
		}
	}
	if wantURL != "" && r.URL != wantURL {
		t.Errorf("url: got %q, want %q", r.URL, wantURL)
	}
	if r.FileURL != r.URL {
		t.Errorf("fileurl: got %q, want %q (= url)", r.FileURL, r.URL)
	}
	if r.Size != int64(len(data)) || r.FileSz != int64(len(data)) {
		t.Errorf("size, filesz: got %d, %d, want %d", r.Size, r.FileSz, len(data))
	}
	if now := time.Now().Unix(); r.UploadTime < now-120 || r.UploadTime > now+5 {
		t.Errorf("upload_time: got %d, want about %d", r.UploadTime, now)
	}
	wantCK := ck
	if wantCK == "" {
		wantCK = "sha512"
	}
	if r.CK != wantCK {
		t.Errorf("ck: got %q, want %q", r.CK, wantCK)
	}
	if ck == "no" {
		for _, k := range []string{"sha512", "sha_b64"} {
			if _, ok := keys[k]; ok {
				t.Errorf("JSON key %q with ck=no: got present, want absent; reply %s", k, body)
			}
		}
		return r
	}
	want := checksumsOf(t, ck, data)
	if r.SHA512 != want.full {
		t.Errorf("sha512 (ck=%s): got %q, want %q", wantCK, r.SHA512, want.full)
	}
	if r.ShaB64 != want.b64 {
		t.Errorf("sha_b64 (ck=%s): got %q, want %q", wantCK, r.ShaB64, want.b64)
	}
	return r
}

// checkPutText checks copyparty's text reply "<bytes>\n<b64>\n<hex>\n<url>\n"
// and returns the URL.
func checkPutText(t *testing.T, body []byte, ck string, data []byte, wantURL string) string {
	t.Helper()
	lines := strings.Split(string(body), "\n")
	if len(lines) != 5 || lines[4] != "" {
		t.Fatalf("text reply: got %q, want 4 newline-terminated lines", body)
	}
	if lines[0] != strconv.Itoa(len(data)) {
		t.Errorf("text line 1 (size): got %q, want %d", lines[0], len(data))
	}
	b64, hx := "checksum-disabled", "checksum-disabled"
	if ck != "no" {
		s := checksumsOf(t, ck, data)
		b64, hx = s.b64, s.hex56
	}
	if lines[1] != b64 {
		t.Errorf("text line 2 (sha_b64, ck=%q): got %q, want %q", ck, lines[1], b64)
	}
	if lines[2] != hx {
		t.Errorf("text line 3 (hex, ck=%q): got %q, want %q", ck, lines[2], hx)
	}
	if wantURL != "" && lines[3] != wantURL {
		t.Errorf("text line 4 (url): got %q, want %q", lines[3], wantURL)
	}
	return lines[3]
}

// volumePath turns a reply URL of server s into a slash path inside the volume
// mounted at /.
func volumePath(t *testing.T, s *server, u string) string {
	t.Helper()
	u, _, _ = strings.Cut(u, "?")
	p, ok := strings.CutPrefix(u, s.URL+"/")
	if !ok {
		t.Fatalf("url: got %q, want it below %s/", u, s.URL)
	}
	rel, err := url.PathUnescape(p)
	if err != nil {
		t.Fatalf("url %q: %v", u, err)
	}
	return rel
}

// waitRemoved polls until rel in dir is gone; false after limit.
func waitRemoved(dir, rel string, limit time.Duration) bool {
	end := time.Now().Add(limit)
	for time.Now().Before(end) {
		if !pathExists(dir, rel) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return !pathExists(dir, rel)
}

// ---- PUT reply forms -----------------------------------------------------

func TestUploadPutReplyForms(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rw")
	data := seededBytes(1, 3000)
	cases := []struct {
		name, query string
		hdr         []string
		form        string // text, url, json
	}{
		{name: "default text", query: "", hdr: nil, form: "text"},
		{name: "Accept url", query: "", hdr: []string{"Accept: url"}, form: "url"},
		{name: "want=url query", query: "?want=url", hdr: nil, form: "url"},
		{name: "j query", query: "?j", hdr: nil, form: "json"},
		{name: "j query with value", query: "?j=1", hdr: nil, form: "json"},
		{name: "Accept json", query: "", hdr: []string{"Accept: json"}, form: "json"},
		{name: "Accept application/json", query: "", hdr: []string{"Accept: application/json"}, form: "json"},
		{name: "Accept application/json with parameters", query: "", hdr: []string{"Accept: application/json; charset=utf-8"}, form: "json"},
		{name: "j query beats Accept url", query: "?j", hdr: []string{"Accept: url"}, form: "json"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := fmt.Sprintf("reply%d.bin", i)
			wantURL := s.URL + "/" + name
			resp, body := s.do(t, "PUT", "/"+name+c.query, data, c.hdr...)
			wantStatus(t, resp, body, http.StatusCreated)
			if got := resp.Header.Get("Location"); got != wantURL {
				t.Errorf("Location: got %q, want %q", got, wantURL)
			}
			ct := resp.Header.Get("Content-Type")
			switch c.form {
			case "text":
				checkPutText(t, body, "sha512", data, wantURL)
				if !strings.HasPrefix(ct, "text/plain") {
					t.Errorf("Content-Type: got %q, want text/plain", ct)
				}
			case "url":
				if string(body) != wantURL {
					t.Errorf("body: got %q, want %q", body, wantURL)
				}
				if !strings.HasPrefix(ct, "text/plain") {
					t.Errorf("Content-Type: got %q, want text/plain", ct)
				}
			case "json":
				checkPutJSON(t, body, "", data, wantURL)
				if !strings.HasPrefix(ct, "application/json") {
					t.Errorf("Content-Type: got %q, want application/json", ct)
				}
			}
			wantFile(t, dir, name, data)
		})
	}
	wantNoPartial(t, dir)
}

// ---- checksums -----------------------------------------------------------

func TestUploadPutChecksums(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rw")
	// Larger than one of the server's 512 KiB read buffers and not a
	// multiple of it.
	data := seededBytes(2, 1<<20+12345)
	small := []byte("one")
	cks := []string{"", "sha512", "no", "md5", "sha1", "sha256", "b2", "b2s", "blake2", "blake2s"}
	for _, ck := range cks {
		for _, via := range []string{"query", "header"} {
			if ck == "" && via == "header" {
				continue
			}
			name := "ck=" + ck + " via " + via
			if ck == "" {
				name = "default"
			}
			t.Run(name, func(t *testing.T) {
				var q string
				var hdr []string
				if ck != "" && via == "query" {
					q = "ck=" + ck
				}
				if ck != "" && via == "header" {
					hdr = append(hdr, "CK: "+ck)
				}
				for _, d := range []struct {
					label string
					data  []byte
				}{{label: "big", data: data}, {label: "small", data: small}} {
					base := strings.NewReplacer("=", "-", " ", "_").Replace(name) + "-" + d.label
					// JSON form
					jq := "?j"
					if q != "" {
						jq += "&" + q
					}
					resp, body := s.do(t, "PUT", "/"+base+".json.bin"+jq, d.data, hdr...)
					wantStatus(t, resp, body, http.StatusCreated)
					checkPutJSON(t, body, ck, d.data, s.URL+"/"+base+".json.bin")
					wantFile(t, dir, base+".json.bin", d.data)
					// text form
					tq := ""
					if q != "" {
						tq = "?" + q
					}
					resp, body = s.do(t, "PUT", "/"+base+".text.bin"+tq, d.data, hdr...)
					wantStatus(t, resp, body, http.StatusCreated)
					wantCK := ck
					if wantCK == "" {
						wantCK = "sha512"
					}
					checkPutText(t, body, wantCK, d.data, s.URL+"/"+base+".text.bin")
					wantFile(t, dir, base+".text.bin", d.data)
				}
			})
		}
	}
	// copyparty's documented values for the body "one" (reference §2.2),
	// to pin the encodings to something not computed by this file.
	t.Run("copyparty examples for body one", func(t *testing.T) {
		want := map[string][2]string{
			"sha512": {"05f70341078acf6a06d423d21720f9643d5f953626d88a02636dc3a9", "BfcDQQeKz2oG1CPSFyD5ZD1flTYm2IoCY23DqeeVgq6w"},
			"md5":    {"f97c5d29941bfb1b2fdab0874906ab82", "-XxdKZQb-xsv2rCHSQargg=="},
			"sha1":   {"fe05bcdcdc4928012781a5f1a2a77cbb5398e106", "_gW83NxJKAEngaXxoqd8u1OY4QY="},
			"sha256": {"7692c3ad3540bb803c020b3aee66cd8887123234ea0c6e7143c0add7", "dpLDrTVAu4A8Ags67mbNiIcSMjTqDG5xQ8Ct1z_0Me0="},
			"b2":     {"b5c79b33ed05bf043e141bcc2a1c9b793c07a60ab737e0b9f5b8dbbb", "tcebM-0FvwQ-FBvMKhybeTwHpgq3N-C59bjbu3SVpbMo"},
			"b2s":    {"b4ac9b9e11e8e9525982160b1f561320ec646559b37514df12267863", "tKybnhHo6VJZghYLH1YTIOxkZVmzdRTfEiZ4YziYD3M="},
		}
		for ck, w := range want {
			resp, body := s.do(t, "PUT", "/one-"+ck+".txt?ck="+ck, []byte("one"))
			wantStatus(t, resp, body, http.StatusCreated)
			lines := strings.Split(string(body), "\n")
			if len(lines) < 3 || lines[2] != w[0] || lines[1] != w[1] {
				t.Errorf("ck=%s text reply: got %q, want lines %q and %q", ck, body, w[1], w[0])
			}
		}
	})
	wantNoPartial(t, dir)
}

// ---- compression ---------------------------------------------------------

func TestUploadPutCompression(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rw")
	data := append(compressibleText(200<<10), seededBytes(3, 777)...)
	cases := []struct {
		name, path, query string
		want              string // stored name
		codec             string
		xfl               int // gzip header XFL byte, -1 unchecked
		stored            bool
	}{
		{name: "gz default level 9", path: "/c/a.txt", query: "gz", want: "c/a.txt.gz", codec: "gz", xfl: 2, stored: false},
		{name: "gz=0 stores", path: "/c/b.txt", query: "gz=0", want: "c/b.txt.gz", codec: "gz", xfl: -1, stored: true},
		{name: "gz=1", path: "/c/c.txt", query: "gz=1", want: "c/c.txt.gz", codec: "gz", xfl: 4, stored: false},
		{name: "gz=5", path: "/c/d.txt", query: "gz=5", want: "c/d.txt.gz", codec: "gz", xfl: 0, stored: false},
		{name: "gz=9", path: "/c/e.txt", query: "gz=9", want: "c/e.txt.gz", codec: "gz", xfl: 2, stored: false},
		{name: "gz keeps .gz name", path: "/c/f.gz", query: "gz", want: "c/f.gz", codec: "gz", xfl: -1, stored: false},
		{name: "gz keeps .tar.gz name", path: "/c/g.tar.gz", query: "gz=6", want: "c/g.tar.gz", codec: "gz", xfl: -1, stored: false},
		{name: "gz keeps upper-case .GZ name", path: "/c/h.GZ", query: "gz", want: "c/h.GZ", codec: "gz", xfl: -1, stored: false},
		{name: "gz with ck=sha1", path: "/c/i.txt", query: "gz&ck=sha1", want: "c/i.txt.gz", codec: "gz", xfl: -1, stored: false},
		{name: "xz default level", path: "/c/j.txt", query: "xz", want: "c/j.txt.xz", codec: "xz", xfl: -1, stored: false},
		{name: "xz=0", path: "/c/k.txt", query: "xz=0", want: "c/k.txt.xz", codec: "xz", xfl: -1, stored: false},
		{name: "xz=9", path: "/c/l.txt", query: "xz=9", want: "c/l.txt.xz", codec: "xz", xfl: -1, stored: false},
		{name: "xz keeps .xz name", path: "/c/m.xz", query: "xz", want: "c/m.xz", codec: "xz", xfl: -1, stored: false},
		{name: "xz with ck=b2s", path: "/c/n.bin", query: "xz=3&ck=b2s", want: "c/n.bin.xz", codec: "xz", xfl: -1, stored: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := s.do(t, "PUT", c.path+"?j&"+c.query, data)
			wantStatus(t, resp, body, http.StatusCreated)
			ck := ""
			if _, v, ok := strings.Cut(c.query, "ck="); ok {
				ck = v
			}
			wantURL := s.URL + "/" + c.want
			r := checkPutJSON(t, body, ck, data, wantURL)
			if got := resp.Header.Get("Location"); got != r.URL {
				t.Errorf("Location: got %q, want %q", got, r.URL)
			}
			if orig := strings.TrimPrefix(c.path, "/"); orig != c.want && pathExists(dir, orig) {
				t.Errorf("uncompressed name %s: got present, want only %s", orig, c.want)
			}
			raw := readVolumeFile(t, dir, c.want)
			var rd io.Reader
			var err error
			switch c.codec {
			case "gz":
				if len(raw) < 10 || raw[0] != 0x1f || raw[1] != 0x8b {
					t.Fatalf("stored file: got %q…, want a gzip stream", raw[:min(10, len(raw))])
				}
				if c.xfl >= 0 && int(raw[8]) != c.xfl {
					t.Errorf("gzip XFL (level hint): got %d, want %d", raw[8], c.xfl)
				}
				rd, err = gzip.NewReader(bytes.NewReader(raw))
			case "xz":
				rd, err = xz.NewReader(bytes.NewReader(raw))
			}
			if err != nil {
				t.Fatalf("opening stored %s stream: %v", c.codec, err)
			}
			got, err := io.ReadAll(rd)
			if err != nil {
				t.Fatalf("decompressing stored file: %v", err)
			}
			if !bytes.Equal(got, data) {
				t.Errorf("decompressed: got %d bytes, want the %d uploaded bytes", len(got), len(data))
			}
			if c.stored && len(raw) < len(data) {
				t.Errorf("gz=0 stored size: got %d, want ≥ %d (no compression)", len(raw), len(data))
			}
			if !c.stored && len(raw) >= len(data)/2 {
				t.Errorf("compressed size: got %d, want < %d", len(raw), len(data)/2)
			}
		})
	}
	wantNoPartial(t, dir)
}

// ---- replace and collisions ----------------------------------------------

func TestUploadPutReplace(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-a", "ed:edpass", "-a", "wo:wopass", "-v", dir+"::rw:rwd,ed")
	old := []byte("old content\n")
	data := seededBytes(4, 5000)
	cases := []struct {
		name, query string
		hdr         []string
		exists      bool
		status      int
	}{
		{name: "query replace, user with d", query: "?replace", hdr: []string{"PW: edpass"}, exists: true, status: 201},
		{name: "query replace=1 via ?pw", query: "?replace=1&pw=edpass", hdr: nil, exists: true, status: 201},
		{name: "Replace header, user with d", query: "", hdr: []string{"PW: edpass", "Replace: 1"}, exists: true, status: 201},
		{name: "Replace header true via basic auth", query: "", hdr: []string{"Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("ed:edpass")), "Replace: true"}, exists: true, status: 201},
		{name: "replace of a missing file creates it", query: "?replace", hdr: []string{"PW: edpass"}, exists: false, status: 201},
		{name: "query replace, anonymous without d", query: "?replace", hdr: nil, exists: true, status: 401},
		{name: "Replace header, anonymous without d", query: "", hdr: []string{"Replace: 1"}, exists: true, status: 401},
		{name: "query replace, user without d", query: "?replace", hdr: []string{"PW: wopass"}, exists: true, status: 403},
		{name: "Replace header, user without d", query: "", hdr: []string{"PW: wopass", "Replace: 1"}, exists: true, status: 403},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := fmt.Sprintf("rep%d.txt", i)
			if c.exists {
				writeFile(t, dir, name, old)
			}
			before := snapshot(t, dir)
			resp, body := s.do(t, "PUT", "/"+name+c.query, data, c.hdr...)
			wantStatus(t, resp, body, c.status)
			if c.status != 201 {
				if c.status == 401 && resp.Header.Get("WWW-Authenticate") == "" {
					t.Errorf("WWW-Authenticate: got none, want a Basic challenge")
				}
				if c.status == 403 && !strings.Contains(string(body), "delete") {
					t.Errorf("403 body: got %q, want it to name the delete permission", body)
				}
				if resp.Header.Get("Location") != "" {
					t.Errorf("Location on refusal: got %q, want none", resp.Header.Get("Location"))
				}
				wantSameSnapshot(t, before, snapshot(t, dir))
				return
			}
			wantURL := s.URL + "/" + name
			checkPutText(t, body, "sha512", data, wantURL)
			wantFile(t, dir, name, data)
			after := slices.DeleteFunc(tree(t, dir), func(p string) bool { return p == ".hist" || strings.HasPrefix(p, ".hist/") })
			if len(after) != len(before)+map[bool]int{true: 0, false: 1}[c.exists] {
				t.Errorf("paths after replace: got %v, want %v plus the new file only", after, slices.Sorted(maps.Keys(before)))
			}
		})
	}
	wantNoPartial(t, dir)
}

var collisionTagRE = `(\d+\.\d{6})-([A-Za-z0-9_-]{8})`

func TestUploadPutCollision(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rw")
	cases := []struct{ name, ext string }{
		{name: "a.txt", ext: ".txt"},
		{name: "x.tar.gz", ext: ".gz"},
		{name: "Makefile", ext: ""},
		{name: "README", ext: ".README"},
		{name: "f.abcdef", ext: ".abcdef"},
		{name: "g.abcdefg", ext: ""},
		{name: "sub/dir/h.md", ext: ".md"},
		{name: "with space.jpeg", ext: ".jpeg"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			orig := []byte("the original, which must survive\n")
			writeFile(t, dir, c.name, orig)
			folder, base := "", c.name
			if j := strings.LastIndexByte(c.name, '/'); j >= 0 {
				folder, base = c.name[:j+1], c.name[j+1:]
			}
			re := regexp.MustCompile("^" + regexp.QuoteMeta(folder+base) + "-" + collisionTagRE + regexp.QuoteMeta(c.ext) + "$")
			var tags []string
			var names []string
			for k := range 2 {
				data := seededBytes(uint64(100+i*2+k), 700+k)
				resp, body := s.do(t, "PUT", "/"+(&url.URL{Path: c.name}).EscapedPath()+"?j", data)
				wantStatus(t, resp, body, http.StatusCreated)
				r := checkPutJSON(t, body, "", data, "")
				if got := resp.Header.Get("Location"); got != r.URL {
					t.Errorf("Location: got %q, want %q", got, r.URL)
				}
				rel := volumePath(t, s, r.URL)
				m := re.FindStringSubmatch(rel)
				if m == nil {
					t.Fatalf("renamed path: got %q, want it to match %s", rel, re)
				}
				sec, _ := strconv.ParseFloat(m[1], 64)
				if now := float64(time.Now().UnixMicro()) / 1e6; sec < now-120 || sec > now+5 {
					t.Errorf("time in suffix: got %s, want about %.6f", m[1], now)
				}
				tags = append(tags, m[2])
				names = append(names, rel)
				wantFile(t, dir, rel, data)
			}
			wantFile(t, dir, c.name, orig)
			if names[0] == names[1] {
				t.Errorf("second collision name: got %q again, want a new name", names[1])
			}
			if tags[0] != tags[1] {
				t.Errorf("client tag: got %q then %q, want the same tag for one client", tags[0], tags[1])
			}
		})
	}
	wantNoPartial(t, dir)
}

// ---- append --------------------------------------------------------------

func TestUploadPutAppend(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-a", "ed:edpass", "-a", "wo:wopass", "-v", dir+"::rw:rwd,ed")
	t.Run("append to existing file", func(t *testing.T) {
		writeFile(t, dir, "log.txt", []byte("line1\n"))
		for i, add := range []string{"line2\n", "line3 is longer\n"} {
			resp, body := s.do(t, "PUT", "/log.txt?apnd&j", []byte(add), "PW: edpass")
			wantStatus(t, resp, body, http.StatusCreated)
			checkPutJSON(t, body, "", []byte(add), s.URL+"/log.txt")
			want := "line1\nline2\n"
			if i == 1 {
				want += "line3 is longer\n"
			}
			wantFile(t, dir, "log.txt", []byte(want))
		}
	})
	t.Run("append with ck=md5 and text reply", func(t *testing.T) {
		writeFile(t, dir, "m.bin", []byte("head"))
		add := seededBytes(5, 600<<10)
		resp, body := s.do(t, "PUT", "/m.bin?apnd&ck=md5", add, "PW: edpass")
		wantStatus(t, resp, body, http.StatusCreated)
		checkPutText(t, body, "md5", add, s.URL+"/m.bin")
		wantFile(t, dir, "m.bin", append([]byte("head"), add...))
	})
	t.Run("append creates a missing file", func(t *testing.T) {
		resp, body := s.do(t, "PUT", "/new/apnd.txt?apnd&j", []byte("first\n"), "PW: edpass")
		wantStatus(t, resp, body, http.StatusCreated)
		checkPutJSON(t, body, "", []byte("first\n"), s.URL+"/new/apnd.txt")
		wantFile(t, dir, "new/apnd.txt", []byte("first\n"))
	})
	for _, c := range []struct {
		name   string
		hdr    []string
		status int
	}{
		{name: "anonymous without d", hdr: nil, status: 401},
		{name: "user without d", hdr: []string{"PW: wopass"}, status: 403},
	} {
		t.Run(c.name, func(t *testing.T) {
			writeFile(t, dir, "keep.txt", []byte("keep\n"))
			before := snapshot(t, dir)
			resp, body := s.do(t, "PUT", "/keep.txt?apnd", []byte("more\n"), c.hdr...)
			wantStatus(t, resp, body, c.status)
			wantSameSnapshot(t, before, snapshot(t, dir))
		})
	}
	wantNoPartial(t, dir)
}

// ---- random names --------------------------------------------------------

func TestUploadPutRand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rw")
	fdir := t.TempDir()
	fsrv := start(t, "-v", fdir+"::rw:c,rand:c,nrand=12")
	cases := []struct {
		name   string
		forced bool
		path   string
		query  string
		hdr    []string
		n      int
		ext    string
	}{
		{name: "rand=5 keeps extension", forced: false, path: "/r/photo.jpg", query: "rand=5", hdr: nil, n: 5, ext: ".jpg"},
		{name: "Rand header 12", forced: false, path: "/r/doc.pdf", query: "", hdr: []string{"Rand: 12"}, n: 12, ext: ".pdf"},
		{name: "rand=8 without extension", forced: false, path: "/r/noext", query: "rand=8", hdr: nil, n: 8, ext: ""},
		{name: "rand=10 takes the last extension", forced: false, path: "/r/x.tar.gz", query: "rand=10", hdr: nil, n: 10, ext: ".gz"},
		{name: "rand=1", forced: false, path: "/r/one.txt", query: "rand=1", hdr: nil, n: 1, ext: ".txt"},
		{name: "rand=64", forced: false, path: "/r/long.txt", query: "rand=64", hdr: nil, n: 64, ext: ".txt"},
		// every original name here is longer than a name rand=1 can make, so
		// no case sees another case's random file under its own original name
		{name: "rand with gz", forced: false, path: "/r/gzipped.txt", query: "rand=6&gz", hdr: nil, n: 6, ext: ".txt.gz"},
		{name: "forced by volume flag", forced: true, path: "/x.txt", query: "", hdr: nil, n: 12, ext: ".txt"},
		{name: "forced, rand=20 is longer", forced: true, path: "/y.txt", query: "rand=20", hdr: nil, n: 20, ext: ".txt"},
		{name: "forced, rand=3 is raised to nrand", forced: true, path: "/z.txt", query: "rand=3", hdr: nil, n: 12, ext: ".txt"},
		{name: "forced, into a subfolder", forced: true, path: "/sub/w.bin", query: "", hdr: nil, n: 12, ext: ".bin"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, d := s, dir
			if c.forced {
				srv, d = fsrv, fdir
			}
			data := seededBytes(uint64(200+i), 999)
			q := "?j"
			if c.query != "" {
				q += "&" + c.query
			}
			resp, body := srv.do(t, "PUT", c.path+q, data, c.hdr...)
			wantStatus(t, resp, body, http.StatusCreated)
			var r putReply
			decodeJSONKeys(t, body, &r)
			if got := resp.Header.Get("Location"); got != r.URL {
				t.Errorf("Location: got %q, want %q", got, r.URL)
			}
			rel := volumePath(t, srv, r.URL)
			folder := strings.TrimPrefix(c.path[:strings.LastIndexByte(c.path, '/')+1], "/")
			re := regexp.MustCompile(fmt.Sprintf(`^%s[A-Za-z0-9_-]{%d}%s$`, regexp.QuoteMeta(folder), c.n, regexp.QuoteMeta(c.ext)))
			if !re.MatchString(rel) {
				t.Errorf("random name: got %q, want it to match %s", rel, re)
			}
			got := readVolumeFile(t, d, rel)
			if strings.Contains(c.query, "gz") {
				zr, err := gzip.NewReader(bytes.NewReader(got))
				if err != nil {
					t.Fatalf("stored file is not gzip: %v", err)
				}
				got, _ = io.ReadAll(zr)
			}
			if !bytes.Equal(got, data) {
				t.Errorf("stored %s: got %d bytes, want the %d uploaded", rel, len(got), len(data))
			}
			if pathExists(d, strings.TrimPrefix(c.path, "/")) {
				t.Errorf("original name %s: got present, want only the random name", c.path)
			}
		})
	}
	t.Run("two uploads get different names", func(t *testing.T) {
		var got []string
		for range 2 {
			resp, body := s.do(t, "PUT", "/r/same.txt?rand=16", []byte("x"), "Accept: url")
			wantStatus(t, resp, body, http.StatusCreated)
			got = append(got, string(body))
		}
		if got[0] == got[1] {
			t.Errorf("second random name: got %q again, want a different one", got[1])
		}
	})
	wantNoPartial(t, dir)
	wantNoPartial(t, fdir)
}

// ---- lifetimes -----------------------------------------------------------

func TestUploadPutLife(t *testing.T) {
	t.Parallel()
	dir60 := t.TempDir()
	// An hour, not a minute: parallel subtests may wait for a free slot
	// long after stays.txt was uploaded, and it must not expire meanwhile.
	s60 := start(t, "-v", dir60+"::rwd:c,lifetime=3600")
	dir2 := t.TempDir()
	s2 := start(t, "-v", dir2+"::rwd:c,lifetime=2")

	// A file without life on the long-lifetime volume must outlive this test.
	resp, body := s60.do(t, "PUT", "/stays.txt", []byte("stays"))
	wantStatus(t, resp, body, http.StatusCreated)

	type up struct {
		s    *server
		dir  string
		path string
		hdr  []string
		mp   bool
	}
	cases := []struct {
		name string
		up   up
		rel  string
	}{
		{name: "life=2 query", up: up{s60, dir60, "/q.txt?life=2", nil, false}, rel: "q.txt"},
		{name: "Life header", up: up{s60, dir60, "/h.txt", []string{"Life: 2"}, false}, rel: "h.txt"},
		{name: "life in a subfolder with gz", up: up{s60, dir60, "/sub/g.txt?life=2&gz", nil, false}, rel: "sub/g.txt.gz"},
		{name: "life above the volume lifetime is capped", up: up{s2, dir2, "/cap.txt?life=3600", nil, false}, rel: "cap.txt"},
		{name: "volume lifetime applies without life", up: up{s2, dir2, "/plain.txt", nil, false}, rel: "plain.txt"},
		{name: "multipart with life=2", up: up{s60, dir60, "/mp/?life=2", nil, true}, rel: "mp/m.txt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			data := []byte("short-lived " + c.name)
			var resp *http.Response
			var body []byte
			t0 := time.Now()
			if c.up.mp {
				form, ct := multipartForm(t, formPart{"f", "m.txt", data})
				resp, body = c.up.s.do(t, "POST", c.up.path, form, append(c.up.hdr, ct)...)
			} else {
				resp, body = c.up.s.do(t, "PUT", c.up.path, data, c.up.hdr...)
			}
			wantStatus(t, resp, body, http.StatusCreated)
			// Present right after the upload, unless the upload and the
			// look took the whole life (a loaded race run, a slow S3).
			if !pathExists(c.up.dir, c.rel) {
				if d := time.Since(t0); d < 2*time.Second {
					t.Fatalf("%s right after upload (%v): got missing, want present", c.rel, d)
				} else {
					t.Logf("%s gone %v after the upload began: its 2 s life was over, nothing to check", c.rel, d)
				}
			}
			if !waitRemoved(c.up.dir, c.rel, 10*time.Second) {
				t.Fatalf("%s 10 s after upload with a 2 s life: got present, want deleted", c.rel)
			}
		})
	}
	t.Run("a replaced file keeps its own lifetime", func(t *testing.T) {
		t.Parallel()
		resp, body := s60.do(t, "PUT", "/re.txt?life=1", []byte("old"))
		wantStatus(t, resp, body, http.StatusCreated)
		resp, body = s60.do(t, "PUT", "/re.txt?replace", []byte("new, no short life"))
		wantStatus(t, resp, body, http.StatusCreated)
		time.Sleep(2500 * time.Millisecond)
		wantFile(t, dir60, "re.txt", []byte("new, no short life"))
	})
	t.Cleanup(func() {
		if !pathExists(dir60, "stays.txt") {
			t.Errorf("stays.txt (1 h lifetime): got deleted, want present")
		}
	})
}

func TestUploadPutLifeRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"-v", dir + "::rw:c,lifetime=60"}
	s1 := start(t, args...)
	resp, body := s1.do(t, "PUT", "/restart.txt?life=3", []byte("gone after restart"))
	wantStatus(t, resp, body, http.StatusCreated)
	resp, body = s1.do(t, "PUT", "/keeper.txt", []byte("stays"))
	wantStatus(t, resp, body, http.StatusCreated)
	if err := s1.stop(); err != nil {
		t.Fatalf("stopping the first server: got %v, want exit 0", err)
	}
	if !pathExists(dir, "restart.txt") {
		t.Fatalf("restart.txt after stop: got missing, want present (life not over yet)")
	}
	start(t, args...)
	if !waitRemoved(dir, "restart.txt", 10*time.Second) {
		t.Fatalf("restart.txt 10 s after upload with life=3 across a restart: got present, want deleted")
	}
	if !pathExists(dir, "keeper.txt") {
		t.Errorf("keeper.txt: got deleted, want present")
	}
}

// ---- paths and transfer encodings -----------------------------------------

var putNameRE = regexp.MustCompile(`^put-` + collisionTagRE + `\.bin$`)

func TestUploadPutPaths(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rw")
	mkdirVol(t, filepath.Join(dir, "exist"))
	cases := []struct {
		name, path string
		want       string // stored path; "" with folder set: generated name
		folder     string
		wantURL    string // expected URL path when it differs from want
	}{
		{name: "missing folders are created", path: "/a/b/c/deep.txt", want: "a/b/c/deep.txt", folder: "", wantURL: ""},
		{name: "trailing slash gets a generated name", path: "/drop/", want: "", folder: "drop/", wantURL: ""},
		{name: "root gets a generated name", path: "/", want: "", folder: "", wantURL: ""},
		{name: "existing folder without slash", path: "/exist", want: "", folder: "exist/", wantURL: ""},
		{name: "escaped names", path: "/sp%20ace/%C3%BC%20n%23.txt", want: "sp ace/ü n#.txt", folder: "", wantURL: "/sp%20ace/%C3%BC%20n%23.txt"},
		{name: "empty body", path: "/empty.txt", want: "empty.txt", folder: "", wantURL: ""},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := seededBytes(uint64(300+i), 1234)
			if c.name == "empty body" {
				data = []byte{}
			}
			resp, body := s.do(t, "PUT", c.path+"?j", data)
			wantStatus(t, resp, body, http.StatusCreated)
			r := checkPutJSON(t, body, "", data, "")
			if got := resp.Header.Get("Location"); got != r.URL {
				t.Errorf("Location: got %q, want %q", got, r.URL)
			}
			rel := volumePath(t, s, r.URL)
			if c.want != "" {
				if rel != c.want {
					t.Errorf("stored path: got %q, want %q", rel, c.want)
				}
				if c.wantURL != "" && r.URL != s.URL+c.wantURL {
					t.Errorf("url: got %q, want %q", r.URL, s.URL+c.wantURL)
				}
			} else {
				name, ok := strings.CutPrefix(rel, c.folder)
				if !ok || !putNameRE.MatchString(name) {
					t.Errorf("generated path: got %q, want %sput-<time>-<tag>.bin", rel, c.folder)
				}
			}
			wantFile(t, dir, rel, data)
		})
	}
	wantNoPartial(t, dir)
}

func TestUploadPutChunked(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rw")
	cases := []struct {
		name, path string
		data       []byte
		want       string
		gz         bool
	}{
		{name: "one byte", path: "/ch/one.bin", data: []byte{7}, want: "ch/one.bin", gz: false},
		{name: "100 KiB", path: "/ch/k100.bin", data: seededBytes(6, 100<<10), want: "ch/k100.bin", gz: false},
		{name: "1.5 MiB", path: "/ch/m15.bin", data: seededBytes(7, 3<<19+3), want: "ch/m15.bin", gz: false},
		{name: "empty", path: "/ch/empty.bin", data: []byte{}, want: "ch/empty.bin", gz: false},
		{name: "with gz", path: "/ch/z.txt?gz", data: compressibleText(300 << 10), want: "ch/z.txt.gz", gz: true},
		{name: "into a new folder with ck=sha256", path: "/ch/new/n.bin?ck=sha256", data: seededBytes(8, 70000), want: "ch/new/n.bin", gz: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sep := "?"
			if strings.Contains(c.path, "?") {
				sep = "&"
			}
			resp, body := doChunked(t, s, "PUT", c.path+sep+"j", c.data)
			wantStatus(t, resp, body, http.StatusCreated)
			ck := ""
			if _, v, ok := strings.Cut(c.path, "ck="); ok {
				ck = v
			}
			checkPutJSON(t, body, ck, c.data, s.URL+"/"+c.want)
			got := readVolumeFile(t, dir, c.want)
			if c.gz {
				zr, err := gzip.NewReader(bytes.NewReader(got))
				if err != nil {
					t.Fatalf("stored file is not gzip: %v", err)
				}
				got, _ = io.ReadAll(zr)
			}
			if !bytes.Equal(got, c.data) {
				t.Errorf("stored %s: got %d bytes, want the %d uploaded", c.want, len(got), len(c.data))
			}
		})
	}
	t.Run("raw chunked request", func(t *testing.T) {
		host := strings.TrimPrefix(s.URL, "http://")
		raw := "PUT /ch/raw.txt HTTP/1.1\r\nHost: " + host + "\r\nTransfer-Encoding: chunked\r\nAccept: url\r\n\r\n" +
			"5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n"
		resp, body := sendRaw(t, s, []byte(raw))
		wantStatus(t, resp, body, http.StatusCreated)
		if string(body) != s.URL+"/ch/raw.txt" {
			t.Errorf("body: got %q, want %q", body, s.URL+"/ch/raw.txt")
		}
		wantFile(t, dir, "ch/raw.txt", []byte("hello, world"))
	})
	wantNoPartial(t, dir)
}

// ---- multipart -----------------------------------------------------------

func TestUploadMultipart(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-a", "ed:edpass", "-v", dir+"::rw:rwd,ed")
	type file struct {
		name string
		data []byte
	}
	f1 := file{"one.txt", []byte("first file\n")}
	f2 := file{"two.bin", seededBytes(9, 700<<10)}
	f3 := file{"a b.txt", []byte("spaced name\n")}
	f4 := file{"empty.txt", []byte{}}
	cases := []struct {
		name   string
		folder string // URL folder, with slashes
		query  string
		hdr    []string
		act    string // leading act field, "" for none
		files  []file
		form   string // json, url, text
		ck     string
		pre    bool   // a file of the same name exists already
		want   string // "replace", "rename" or "" (plain)
	}{
		{name: "single f, ?j", folder: "/mp1/", query: "?j", hdr: nil, act: "", files: []file{f1}, form: "json", ck: "", pre: false, want: ""},
		{name: "several f in one request, ?j", folder: "/mp2/", query: "?j", hdr: nil, act: "", files: []file{f1, f2, f3, f4}, form: "json", ck: "", pre: false, want: ""},
		{name: "leading act=bput", folder: "/mp3/", query: "?j", hdr: nil, act: "bput", files: []file{f1, f2}, form: "json", ck: "", pre: false, want: ""},
		{name: "Accept application/json", folder: "/mp4/", query: "", hdr: []string{"Accept: application/json"}, act: "bput", files: []file{f2}, form: "json", ck: "", pre: false, want: ""},
		{name: "Accept url", folder: "/mp5/", query: "", hdr: []string{"Accept: url"}, act: "", files: []file{f1, f3}, form: "url", ck: "", pre: false, want: ""},
		{name: "default text", folder: "/mp6/", query: "", hdr: nil, act: "bput", files: []file{f1, f2}, form: "text", ck: "", pre: false, want: ""},
		{name: "ck=md5", folder: "/mp7/", query: "?j&ck=md5", hdr: nil, act: "", files: []file{f1, f2}, form: "json", ck: "md5", pre: false, want: ""},
		{name: "CK header b2s", folder: "/mp8/", query: "?j", hdr: []string{"CK: b2s"}, act: "", files: []file{f1}, form: "json", ck: "b2s", pre: false, want: ""},
		{name: "ck=no", folder: "/mp9/", query: "?j&ck=no", hdr: nil, act: "", files: []file{f1, f2}, form: "json", ck: "no", pre: false, want: ""},
		{name: "into missing nested folders", folder: "/mp10/new/deeper/", query: "?j", hdr: nil, act: "", files: []file{f1}, form: "json", ck: "", pre: false, want: ""},
		{name: "folder without trailing slash", folder: "/mp11", query: "?j", hdr: nil, act: "", files: []file{f3}, form: "json", ck: "", pre: false, want: ""},
		{name: "existing name is renamed", folder: "/mp12/", query: "?j", hdr: nil, act: "", files: []file{f1}, form: "json", ck: "", pre: true, want: "rename"},
		{name: "replace with d", folder: "/mp13/", query: "?j&replace", hdr: []string{"PW: edpass"}, act: "", files: []file{f1}, form: "json", ck: "", pre: true, want: "replace"},
		{name: "Replace header with d", folder: "/mp14/", query: "?j", hdr: []string{"PW: edpass", "Replace: 1"}, act: "bput", files: []file{f1, f2}, form: "json", ck: "", pre: true, want: "replace"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			folder := strings.Trim(c.folder, "/") + "/"
			orig := []byte("pre-existing\n")
			if c.pre {
				for _, f := range c.files {
					writeFile(t, dir, folder+f.name, orig)
				}
			}
			var parts []formPart
			if c.act != "" {
				parts = append(parts, formPart{"act", "", []byte(c.act)})
			}
			var total int64
			for _, f := range c.files {
				parts = append(parts, formPart{"f", f.name, f.data})
				total += int64(len(f.data))
			}
			form, ct := multipartForm(t, parts...)
			resp, body := s.do(t, "POST", c.folder+c.query, form, append(c.hdr, ct)...)
			wantStatus(t, resp, body, http.StatusCreated)
			var urls []string
			switch c.form {
			case "json":
				var r multipartReply
				keys := decodeJSONKeys(t, body, &r)
				if r.Status != "OK" {
					t.Errorf("status: got %q, want OK", r.Status)
				}
				if r.Sz != total {
					t.Errorf("sz: got %d, want %d", r.Sz, total)
				}
				if len(r.Files) != len(c.files) {
					t.Fatalf("files: got %d, want %d; reply %s", len(r.Files), len(c.files), body)
				}
				_, hasFileURL := keys["fileurl"]
				if len(c.files) == 1 && (!hasFileURL || r.FileURL != r.Files[0].URL) {
					t.Errorf("fileurl: got %q, want %q", r.FileURL, r.Files[0].URL)
				}
				if len(c.files) > 1 && hasFileURL {
					t.Errorf("fileurl with %d files: got %q, want absent", len(c.files), r.FileURL)
				}
				var rawFiles struct {
					Files []map[string]json.RawMessage `json:"files"`
				}
				json.Unmarshal(body, &rawFiles)
				for i, f := range c.files {
					got := r.Files[i]
					for _, k := range []string{"url", "size", "sz", "fn", "fn_orig", "path", "upload_time", "ck"} {
						if _, ok := rawFiles.Files[i][k]; !ok {
							t.Errorf("files[%d] key %q: got absent, want present", i, k)
						}
					}
					if got.Sz != int64(len(f.data)) || got.Size != int64(len(f.data)) {
						t.Errorf("files[%d] sz, size: got %d, %d, want %d", i, got.Sz, got.Size, len(f.data))
					}
					wantCK := c.ck
					if wantCK == "" {
						wantCK = "sha512"
					}
					if got.CK != wantCK {
						t.Errorf("files[%d] ck: got %q, want %q", i, got.CK, wantCK)
					}
					if c.ck == "no" {
						for _, k := range []string{"sha512", "sha_b64"} {
							if _, ok := rawFiles.Files[i][k]; ok {
								t.Errorf("files[%d] key %q with ck=no: got present, want absent", i, k)
							}
						}
					} else {
						sum := checksumsOf(t, wantCK, f.data)
						if got.SHA512 != sum.full || got.ShaB64 != sum.b64 {
							t.Errorf("files[%d] sha512, sha_b64: got %q, %q, want %q, %q", i, got.SHA512, got.ShaB64, sum.full, sum.b64)
						}
					}
					if got.FnOrig != f.name {
						t.Errorf("files[%d] fn_orig: got %q, want %q", i, got.FnOrig, f.name)
					}
					rel := volumePath(t, s, got.URL)
					if got.Fn != rel[strings.LastIndexByte(rel, '/')+1:] {
						t.Errorf("files[%d] fn: got %q, want %q (the stored name)", i, got.Fn, rel[strings.LastIndexByte(rel, '/')+1:])
					}
					if wantPath := strings.TrimPrefix(got.URL, s.URL+"/"); got.Path != wantPath {
						t.Errorf("files[%d] path: got %q, want %q", i, got.Path, wantPath)
					}
					urls = append(urls, got.URL)
				}
			case "url":
				urls = strings.Split(string(body), "\n")
				if len(urls) != len(c.files) {
					t.Fatalf("url reply: got %q, want %d URLs, one a line", body, len(c.files))
				}
			case "text":
				if !strings.HasPrefix(string(body), "OK") {
					t.Errorf("text reply: got %q, want it to start with OK", body)
				}
				for _, f := range c.files {
					u := s.URL + "/" + (&url.URL{Path: folder + f.name}).EscapedPath()
					if !strings.Contains(string(body), u) {
						t.Errorf("text reply: got %q, want it to list %s", body, u)
					}
					if sum := checksumsOf(t, "sha512", f.data); !strings.Contains(string(body), sum.b64) {
						t.Errorf("text reply: got %q, want it to carry checksum %s", body, sum.b64)
					}
					urls = append(urls, u)
				}
			}
			for i, f := range c.files {
				rel := volumePath(t, s, urls[i])
				switch c.want {
				case "":
					if rel != folder+f.name {
						t.Errorf("stored path: got %q, want %q", rel, folder+f.name)
					}
				case "replace":
					if rel != folder+f.name {
						t.Errorf("stored path with replace: got %q, want %q", rel, folder+f.name)
					}
				case "rename":
					ext := f.name[strings.LastIndexByte(f.name, '.'):]
					re := regexp.MustCompile("^" + regexp.QuoteMeta(folder+f.name) + "-" + collisionTagRE + regexp.QuoteMeta(ext) + "$")
					if !re.MatchString(rel) {
						t.Errorf("renamed path: got %q, want it to match %s", rel, re)
					}
					wantFile(t, dir, folder+f.name, orig)
				}
				wantFile(t, dir, rel, f.data)
			}
		})
	}
	t.Run("a plain field after act is ignored", func(t *testing.T) {
		form, ct := multipartForm(t, formPart{"act", "", []byte("bput")}, formPart{"note", "", []byte("hi")}, formPart{"f", "n.txt", []byte("n")})
		resp, body := s.do(t, "POST", "/mp20/?j", form, ct)
		wantStatus(t, resp, body, http.StatusCreated)
		wantFile(t, dir, "mp20/n.txt", []byte("n"))
	})
	t.Run("multipart rand", func(t *testing.T) {
		form, ct := multipartForm(t, formPart{"f", "pic.png", []byte("png")})
		resp, body := s.do(t, "POST", "/mp21/?rand=7", form, ct, "Accept: url")
		wantStatus(t, resp, body, http.StatusCreated)
		rel := volumePath(t, s, string(body))
		if !regexp.MustCompile(`^mp21/[A-Za-z0-9_-]{7}\.png$`).MatchString(rel) {
			t.Errorf("random name: got %q, want mp21/<7 chars>.png", rel)
		}
		wantFile(t, dir, rel, []byte("png"))
	})
	wantNoPartial(t, dir)
}
