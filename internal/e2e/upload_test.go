package e2e

// End-to-end tests of PUT and multipart uploads: reply forms, checksums,
// compression, replace/collision/append, random names, lifetimes, paths,
// chunked bodies. Refused uploads are in upload_bad_test.go. Helpers here
// are prefixed "up" so that they cannot clash with other test files.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
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
	"math/rand/v2"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
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

// upDigest computes checksum ck of data independently of the server.
func upDigest(t *testing.T, ck string, data []byte) []byte {
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

// upSum is a checksum in the three encodings an upload reply uses.
type upSum struct {
	full  string // URL-safe base64 (padded) of the whole digest: JSON "sha512"
	b64   string // URL-safe base64 of the first 33 bytes: "sha_b64", text line 2
	hex56 string // lowercase hex cut to 56 characters: text line 3
}

func upSums(t *testing.T, ck string, data []byte) upSum {
	t.Helper()
	d := upDigest(t, ck, data)
	h := hex.EncodeToString(d)
	if len(h) > 56 {
		h = h[:56]
	}
	return upSum{
		full:  base64.URLEncoding.EncodeToString(d),
		b64:   base64.URLEncoding.EncodeToString(d[:min(33, len(d))]),
		hex56: h,
	}
}

// upData returns n deterministic pseudo-random bytes.
func upData(seed uint64, n int) []byte {
	var key [32]byte
	key[0] = byte(seed)
	key[1] = byte(seed >> 8)
	b := make([]byte, n)
	rand.NewChaCha8(key).Read(b)
	return b
}

// upText returns n bytes of compressible text.
func upText(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %d of a compressible upload body; hoard stores it\n", i%977)
	}
	return b.Bytes()[:n]
}

// upPutReply is the JSON reply to a PUT (spec fields plus copyparty's).
type upPutReply struct {
	URL        string `json:"url"`
	Size       int64  `json:"size"`
	SHA512     string `json:"sha512"`
	UploadTime int64  `json:"upload_time"`
	FileURL    string `json:"fileurl"`
	FileSz     int64  `json:"filesz"`
	ShaB64     string `json:"sha_b64"`
	CK         string `json:"ck"`
}

// upDecode unmarshals a JSON reply into v and returns its keys.
func upDecode(t *testing.T, body []byte, v any) map[string]json.RawMessage {
	t.Helper()
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("reply is not JSON: %v; got %q", err, body)
	}
	var keys map[string]json.RawMessage
	json.Unmarshal(body, &keys)
	return keys
}

// upCheckPutJSON checks a PUT's JSON reply against the uploaded data.
func upCheckPutJSON(t *testing.T, body []byte, ck string, data []byte, wantURL string) upPutReply {
	t.Helper()
	var r upPutReply
	keys := upDecode(t, body, &r)
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
	want := upSums(t, ck, data)
	if r.SHA512 != want.full {
		t.Errorf("sha512 (ck=%s): got %q, want %q", wantCK, r.SHA512, want.full)
	}
	if r.ShaB64 != want.b64 {
		t.Errorf("sha_b64 (ck=%s): got %q, want %q", wantCK, r.ShaB64, want.b64)
	}
	return r
}

// upCheckPutText checks copyparty's text reply "<bytes>\n<b64>\n<hex>\n<url>\n"
// and returns the URL.
func upCheckPutText(t *testing.T, body []byte, ck string, data []byte, wantURL string) string {
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
		s := upSums(t, ck, data)
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

// upRel turns a reply URL of server s into a slash path inside the volume
// mounted at /.
func upRel(t *testing.T, s *server, u string) string {
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

// upRead returns the bytes of rel in dir, failing when it is missing.
func upRead(t *testing.T, dir, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("stored file %s: %v", rel, err)
	}
	return b
}

// upWantFile checks that rel in dir holds exactly want.
func upWantFile(t *testing.T, dir, rel string, want []byte) {
	t.Helper()
	got := upRead(t, dir, rel)
	if !bytes.Equal(got, want) {
		t.Errorf("stored %s: got %d bytes (sha256 %x), want %d bytes (sha256 %x)", rel, len(got), sha256.Sum256(got), len(want), sha256.Sum256(want))
	}
}

func upExists(dir, rel string) bool {
	_, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel)))
	return err == nil
}

// upSnap records every path below dir with a digest of its content, to
// prove that a refused request changed nothing (tree plus contents).
func upSnap(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, rel := range tree(t, dir) {
		if rel == ".hist" || strings.HasPrefix(rel, ".hist/") {
			continue // the server's state (its logs of writes in progress) is not the volume's content
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		fi, err := os.Lstat(p)
		if err != nil {
			continue // vanished meanwhile
		}
		if fi.IsDir() {
			m[rel] = "dir"
			continue
		}
		b, _ := os.ReadFile(p)
		m[rel] = fmt.Sprintf("%d bytes, sha256 %x", len(b), sha256.Sum256(b))
	}
	return m
}

// upSameSnap fails unless the two snapshots are equal.
func upSameSnap(t *testing.T, before, after map[string]string) {
	t.Helper()
	for p, a := range after {
		if b, ok := before[p]; !ok {
			t.Errorf("after the request %s exists (%s); got a new path, want none", p, a)
		} else if a != b {
			t.Errorf("after the request %s: got %s, want unchanged %s", p, a, b)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("after the request %s: got missing, want unchanged", p)
		}
	}
}

// upNoPartial fails when a work file (.PARTIAL) is left in dir.
func upNoPartial(t *testing.T, dir string) {
	t.Helper()
	for _, p := range tree(t, dir) {
		if strings.HasSuffix(p, ".PARTIAL") {
			t.Errorf("stray work file: got %s, want none", p)
		}
	}
}

// upDoChunked sends body without Content-Length (chunked transfer encoding).
func upDoChunked(t *testing.T, s *server, method, path string, body []byte, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, s.URL+path, io.MultiReader(bytes.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = -1
	return roundTrip(t, req, hdr...)
}

// upRaw writes raw bytes on a fresh connection, half-closes it and reads
// the one response. The request may be incomplete on purpose.
func upRaw(t *testing.T, s *server, raw []byte) (*http.Response, []byte) {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(s.URL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	// Write concurrently: a server that refuses early (431) stops reading,
	// and a large request would then block here. Closing c ends the writer.
	go func() {
		c.Write(raw)
		c.(*net.TCPConn).CloseWrite()
	}()
	// The request, for wantStatus's messages: method and target of line 1.
	line, _, _ := strings.Cut(string(raw[:min(len(raw), 2000)]), "\r\n")
	method, target, _ := strings.Cut(line, " ")
	target, _, _ = strings.Cut(target, " ")
	u, err := url.ParseRequestURI(target)
	if err != nil {
		t.Fatalf("test bug: request target %q: %v", target, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method, URL: u})
	if err != nil {
		t.Fatalf("%s %s: reading response: got %v, want an HTTP response", method, target, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, body
}

// upPart is one part of a multipart form; file "" makes a plain field.
type upPart struct {
	field, file string
	data        []byte
}

// upForm builds a multipart/form-data body.
func upForm(t *testing.T, parts ...upPart) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, p := range parts {
		var w io.Writer
		var err error
		if p.file == "" {
			w, err = mw.CreateFormField(p.field)
		} else {
			w, err = mw.CreateFormFile(p.field, p.file)
		}
		if err != nil {
			t.Fatal(err)
		}
		w.Write(p.data)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), "Content-Type: " + mw.FormDataContentType()
}

// upMPFile is one file of a multipart JSON reply.
type upMPFile struct {
	upPutReply
	Sz     int64  `json:"sz"`
	Fn     string `json:"fn"`
	FnOrig string `json:"fn_orig"`
	Path   string `json:"path"`
}

type upMPReply struct {
	Status  string     `json:"status"`
	Sz      int64      `json:"sz"`
	Files   []upMPFile `json:"files"`
	FileURL string     `json:"fileurl"`
	Error   string     `json:"error"`
}

// upWaitGone polls until rel in dir is gone; false after limit.
func upWaitGone(dir, rel string, limit time.Duration) bool {
	end := time.Now().Add(limit)
	for time.Now().Before(end) {
		if !upExists(dir, rel) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return !upExists(dir, rel)
}

// ---- PUT reply forms -----------------------------------------------------

func TestUploadPutReplyForms(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rw")
	data := upData(1, 3000)
	cases := []struct {
		name, query string
		hdr         []string
		form        string // text, url, json
	}{
		{"default text", "", nil, "text"},
		{"Accept url", "", []string{"Accept: url"}, "url"},
		{"want=url query", "?want=url", nil, "url"},
		{"j query", "?j", nil, "json"},
		{"j query with value", "?j=1", nil, "json"},
		{"Accept json", "", []string{"Accept: json"}, "json"},
		{"Accept application/json", "", []string{"Accept: application/json"}, "json"},
		{"Accept application/json with parameters", "", []string{"Accept: application/json; charset=utf-8"}, "json"},
		{"j query beats Accept url", "?j", []string{"Accept: url"}, "json"},
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
				upCheckPutText(t, body, "sha512", data, wantURL)
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
				upCheckPutJSON(t, body, "", data, wantURL)
				if !strings.HasPrefix(ct, "application/json") {
					t.Errorf("Content-Type: got %q, want application/json", ct)
				}
			}
			upWantFile(t, dir, name, data)
		})
	}
	upNoPartial(t, dir)
}

// ---- checksums -----------------------------------------------------------

func TestUploadPutChecksums(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rw")
	// Larger than one of the server's 512 KiB read buffers and not a
	// multiple of it.
	data := upData(2, 1<<20+12345)
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
				}{{"big", data}, {"small", small}} {
					base := strings.NewReplacer("=", "-", " ", "_").Replace(name) + "-" + d.label
					// JSON form
					jq := "?j"
					if q != "" {
						jq += "&" + q
					}
					resp, body := s.do(t, "PUT", "/"+base+".json.bin"+jq, d.data, hdr...)
					wantStatus(t, resp, body, http.StatusCreated)
					upCheckPutJSON(t, body, ck, d.data, s.URL+"/"+base+".json.bin")
					upWantFile(t, dir, base+".json.bin", d.data)
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
					upCheckPutText(t, body, wantCK, d.data, s.URL+"/"+base+".text.bin")
					upWantFile(t, dir, base+".text.bin", d.data)
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
	upNoPartial(t, dir)
}

// ---- compression ---------------------------------------------------------

func TestUploadPutCompression(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rw")
	data := append(upText(200<<10), upData(3, 777)...)
	cases := []struct {
		name, path, query string
		want              string // stored name
		codec             string
		xfl               int // gzip header XFL byte, -1 unchecked
		stored            bool
	}{
		{"gz default level 9", "/c/a.txt", "gz", "c/a.txt.gz", "gz", 2, false},
		{"gz=0 stores", "/c/b.txt", "gz=0", "c/b.txt.gz", "gz", -1, true},
		{"gz=1", "/c/c.txt", "gz=1", "c/c.txt.gz", "gz", 4, false},
		{"gz=5", "/c/d.txt", "gz=5", "c/d.txt.gz", "gz", 0, false},
		{"gz=9", "/c/e.txt", "gz=9", "c/e.txt.gz", "gz", 2, false},
		{"gz keeps .gz name", "/c/f.gz", "gz", "c/f.gz", "gz", -1, false},
		{"gz keeps .tar.gz name", "/c/g.tar.gz", "gz=6", "c/g.tar.gz", "gz", -1, false},
		{"gz keeps upper-case .GZ name", "/c/h.GZ", "gz", "c/h.GZ", "gz", -1, false},
		{"gz with ck=sha1", "/c/i.txt", "gz&ck=sha1", "c/i.txt.gz", "gz", -1, false},
		{"xz default level", "/c/j.txt", "xz", "c/j.txt.xz", "xz", -1, false},
		{"xz=0", "/c/k.txt", "xz=0", "c/k.txt.xz", "xz", -1, false},
		{"xz=9", "/c/l.txt", "xz=9", "c/l.txt.xz", "xz", -1, false},
		{"xz keeps .xz name", "/c/m.xz", "xz", "c/m.xz", "xz", -1, false},
		{"xz with ck=b2s", "/c/n.bin", "xz=3&ck=b2s", "c/n.bin.xz", "xz", -1, false},
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
			r := upCheckPutJSON(t, body, ck, data, wantURL)
			if got := resp.Header.Get("Location"); got != r.URL {
				t.Errorf("Location: got %q, want %q", got, r.URL)
			}
			if orig := strings.TrimPrefix(c.path, "/"); orig != c.want && upExists(dir, orig) {
				t.Errorf("uncompressed name %s: got present, want only %s", orig, c.want)
			}
			raw := upRead(t, dir, c.want)
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
	upNoPartial(t, dir)
}

// ---- replace and collisions ----------------------------------------------

func TestUploadPutReplace(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-a", "ed:edpass", "-a", "wo:wopass", "-v", dir+"::rw:rwd,ed")
	old := []byte("old content\n")
	data := upData(4, 5000)
	cases := []struct {
		name, query string
		hdr         []string
		exists      bool
		status      int
	}{
		{"query replace, user with d", "?replace", []string{"PW: edpass"}, true, 201},
		{"query replace=1 via ?pw", "?replace=1&pw=edpass", nil, true, 201},
		{"Replace header, user with d", "", []string{"PW: edpass", "Replace: 1"}, true, 201},
		{"Replace header true via basic auth", "", []string{"Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("ed:edpass")), "Replace: true"}, true, 201},
		{"replace of a missing file creates it", "?replace", []string{"PW: edpass"}, false, 201},
		{"query replace, anonymous without d", "?replace", nil, true, 401},
		{"Replace header, anonymous without d", "", []string{"Replace: 1"}, true, 401},
		{"query replace, user without d", "?replace", []string{"PW: wopass"}, true, 403},
		{"Replace header, user without d", "", []string{"PW: wopass", "Replace: 1"}, true, 403},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := fmt.Sprintf("rep%d.txt", i)
			if c.exists {
				writeFile(t, dir, name, old)
			}
			before := upSnap(t, dir)
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
				upSameSnap(t, before, upSnap(t, dir))
				return
			}
			wantURL := s.URL + "/" + name
			upCheckPutText(t, body, "sha512", data, wantURL)
			upWantFile(t, dir, name, data)
			after := slices.DeleteFunc(tree(t, dir), func(p string) bool { return p == ".hist" || strings.HasPrefix(p, ".hist/") })
			if len(after) != len(before)+map[bool]int{true: 0, false: 1}[c.exists] {
				t.Errorf("paths after replace: got %v, want %v plus the new file only", after, slices.Sorted(maps.Keys(before)))
			}
		})
	}
	upNoPartial(t, dir)
}

var upTagRE = `(\d+\.\d{6})-([A-Za-z0-9_-]{8})`

func TestUploadPutCollision(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rw")
	cases := []struct{ name, ext string }{
		{"a.txt", ".txt"},
		{"x.tar.gz", ".gz"},
		{"Makefile", ""},
		{"README", ".README"},
		{"f.abcdef", ".abcdef"},
		{"g.abcdefg", ""},
		{"sub/dir/h.md", ".md"},
		{"with space.jpeg", ".jpeg"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			orig := []byte("the original, which must survive\n")
			writeFile(t, dir, c.name, orig)
			folder, base := "", c.name
			if j := strings.LastIndexByte(c.name, '/'); j >= 0 {
				folder, base = c.name[:j+1], c.name[j+1:]
			}
			re := regexp.MustCompile("^" + regexp.QuoteMeta(folder+base) + "-" + upTagRE + regexp.QuoteMeta(c.ext) + "$")
			var tags []string
			var names []string
			for k := range 2 {
				data := upData(uint64(100+i*2+k), 700+k)
				resp, body := s.do(t, "PUT", "/"+(&url.URL{Path: c.name}).EscapedPath()+"?j", data)
				wantStatus(t, resp, body, http.StatusCreated)
				r := upCheckPutJSON(t, body, "", data, "")
				if got := resp.Header.Get("Location"); got != r.URL {
					t.Errorf("Location: got %q, want %q", got, r.URL)
				}
				rel := upRel(t, s, r.URL)
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
				upWantFile(t, dir, rel, data)
			}
			upWantFile(t, dir, c.name, orig)
			if names[0] == names[1] {
				t.Errorf("second collision name: got %q again, want a new name", names[1])
			}
			if tags[0] != tags[1] {
				t.Errorf("client tag: got %q then %q, want the same tag for one client", tags[0], tags[1])
			}
		})
	}
	upNoPartial(t, dir)
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
			upCheckPutJSON(t, body, "", []byte(add), s.URL+"/log.txt")
			want := "line1\nline2\n"
			if i == 1 {
				want += "line3 is longer\n"
			}
			upWantFile(t, dir, "log.txt", []byte(want))
		}
	})
	t.Run("append with ck=md5 and text reply", func(t *testing.T) {
		writeFile(t, dir, "m.bin", []byte("head"))
		add := upData(5, 600<<10)
		resp, body := s.do(t, "PUT", "/m.bin?apnd&ck=md5", add, "PW: edpass")
		wantStatus(t, resp, body, http.StatusCreated)
		upCheckPutText(t, body, "md5", add, s.URL+"/m.bin")
		upWantFile(t, dir, "m.bin", append([]byte("head"), add...))
	})
	t.Run("append creates a missing file", func(t *testing.T) {
		resp, body := s.do(t, "PUT", "/new/apnd.txt?apnd&j", []byte("first\n"), "PW: edpass")
		wantStatus(t, resp, body, http.StatusCreated)
		upCheckPutJSON(t, body, "", []byte("first\n"), s.URL+"/new/apnd.txt")
		upWantFile(t, dir, "new/apnd.txt", []byte("first\n"))
	})
	for _, c := range []struct {
		name   string
		hdr    []string
		status int
	}{
		{"anonymous without d", nil, 401},
		{"user without d", []string{"PW: wopass"}, 403},
	} {
		t.Run(c.name, func(t *testing.T) {
			writeFile(t, dir, "keep.txt", []byte("keep\n"))
			before := upSnap(t, dir)
			resp, body := s.do(t, "PUT", "/keep.txt?apnd", []byte("more\n"), c.hdr...)
			wantStatus(t, resp, body, c.status)
			upSameSnap(t, before, upSnap(t, dir))
		})
	}
	upNoPartial(t, dir)
}

// ---- random names --------------------------------------------------------

func TestUploadPutRand(t *testing.T) {
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
		{"rand=5 keeps extension", false, "/r/photo.jpg", "rand=5", nil, 5, ".jpg"},
		{"Rand header 12", false, "/r/doc.pdf", "", []string{"Rand: 12"}, 12, ".pdf"},
		{"rand=8 without extension", false, "/r/noext", "rand=8", nil, 8, ""},
		{"rand=10 takes the last extension", false, "/r/x.tar.gz", "rand=10", nil, 10, ".gz"},
		{"rand=1", false, "/r/one.txt", "rand=1", nil, 1, ".txt"},
		{"rand=64", false, "/r/long.txt", "rand=64", nil, 64, ".txt"},
		{"rand with gz", false, "/r/a.txt", "rand=6&gz", nil, 6, ".txt.gz"},
		{"forced by volume flag", true, "/x.txt", "", nil, 12, ".txt"},
		{"forced, rand=20 is longer", true, "/y.txt", "rand=20", nil, 20, ".txt"},
		{"forced, rand=3 is raised to nrand", true, "/z.txt", "rand=3", nil, 12, ".txt"},
		{"forced, into a subfolder", true, "/sub/w.bin", "", nil, 12, ".bin"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, d := s, dir
			if c.forced {
				srv, d = fsrv, fdir
			}
			data := upData(uint64(200+i), 999)
			q := "?j"
			if c.query != "" {
				q += "&" + c.query
			}
			resp, body := srv.do(t, "PUT", c.path+q, data, c.hdr...)
			wantStatus(t, resp, body, http.StatusCreated)
			var r upPutReply
			upDecode(t, body, &r)
			if got := resp.Header.Get("Location"); got != r.URL {
				t.Errorf("Location: got %q, want %q", got, r.URL)
			}
			rel := upRel(t, srv, r.URL)
			folder := strings.TrimPrefix(c.path[:strings.LastIndexByte(c.path, '/')+1], "/")
			re := regexp.MustCompile(fmt.Sprintf(`^%s[A-Za-z0-9_-]{%d}%s$`, regexp.QuoteMeta(folder), c.n, regexp.QuoteMeta(c.ext)))
			if !re.MatchString(rel) {
				t.Errorf("random name: got %q, want it to match %s", rel, re)
			}
			got := upRead(t, d, rel)
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
			if upExists(d, strings.TrimPrefix(c.path, "/")) {
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
	upNoPartial(t, dir)
	upNoPartial(t, fdir)
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
		{"life=2 query", up{s60, dir60, "/q.txt?life=2", nil, false}, "q.txt"},
		{"Life header", up{s60, dir60, "/h.txt", []string{"Life: 2"}, false}, "h.txt"},
		{"life in a subfolder with gz", up{s60, dir60, "/sub/g.txt?life=2&gz", nil, false}, "sub/g.txt.gz"},
		{"life above the volume lifetime is capped", up{s2, dir2, "/cap.txt?life=3600", nil, false}, "cap.txt"},
		{"volume lifetime applies without life", up{s2, dir2, "/plain.txt", nil, false}, "plain.txt"},
		{"multipart with life=2", up{s60, dir60, "/mp/?life=2", nil, true}, "mp/m.txt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			data := []byte("short-lived " + c.name)
			var resp *http.Response
			var body []byte
			if c.up.mp {
				form, ct := upForm(t, upPart{"f", "m.txt", data})
				resp, body = c.up.s.do(t, "POST", c.up.path, form, append(c.up.hdr, ct)...)
			} else {
				resp, body = c.up.s.do(t, "PUT", c.up.path, data, c.up.hdr...)
			}
			wantStatus(t, resp, body, http.StatusCreated)
			if !upExists(c.up.dir, c.rel) {
				t.Fatalf("%s right after upload: got missing, want present", c.rel)
			}
			if !upWaitGone(c.up.dir, c.rel, 10*time.Second) {
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
		upWantFile(t, dir60, "re.txt", []byte("new, no short life"))
	})
	t.Cleanup(func() {
		if !upExists(dir60, "stays.txt") {
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
	if !upExists(dir, "restart.txt") {
		t.Fatalf("restart.txt after stop: got missing, want present (life not over yet)")
	}
	start(t, args...)
	if !upWaitGone(dir, "restart.txt", 10*time.Second) {
		t.Fatalf("restart.txt 10 s after upload with life=3 across a restart: got present, want deleted")
	}
	if !upExists(dir, "keeper.txt") {
		t.Errorf("keeper.txt: got deleted, want present")
	}
}

// ---- paths and transfer encodings -----------------------------------------

var upPutNameRE = regexp.MustCompile(`^put-` + upTagRE + `\.bin$`)

func TestUploadPutPaths(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rw")
	if err := os.MkdirAll(filepath.Join(dir, "exist"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		want       string // stored path; "" with folder set: generated name
		folder     string
		wantURL    string // expected URL path when it differs from want
	}{
		{"missing folders are created", "/a/b/c/deep.txt", "a/b/c/deep.txt", "", ""},
		{"trailing slash gets a generated name", "/drop/", "", "drop/", ""},
		{"root gets a generated name", "/", "", "", ""},
		{"existing folder without slash", "/exist", "", "exist/", ""},
		{"escaped names", "/sp%20ace/%C3%BC%20n%23.txt", "sp ace/ü n#.txt", "", "/sp%20ace/%C3%BC%20n%23.txt"},
		{"empty body", "/empty.txt", "empty.txt", "", ""},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := upData(uint64(300+i), 1234)
			if c.name == "empty body" {
				data = []byte{}
			}
			resp, body := s.do(t, "PUT", c.path+"?j", data)
			wantStatus(t, resp, body, http.StatusCreated)
			r := upCheckPutJSON(t, body, "", data, "")
			if got := resp.Header.Get("Location"); got != r.URL {
				t.Errorf("Location: got %q, want %q", got, r.URL)
			}
			rel := upRel(t, s, r.URL)
			if c.want != "" {
				if rel != c.want {
					t.Errorf("stored path: got %q, want %q", rel, c.want)
				}
				if c.wantURL != "" && r.URL != s.URL+c.wantURL {
					t.Errorf("url: got %q, want %q", r.URL, s.URL+c.wantURL)
				}
			} else {
				name, ok := strings.CutPrefix(rel, c.folder)
				if !ok || !upPutNameRE.MatchString(name) {
					t.Errorf("generated path: got %q, want %sput-<time>-<tag>.bin", rel, c.folder)
				}
			}
			upWantFile(t, dir, rel, data)
		})
	}
	upNoPartial(t, dir)
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
		{"one byte", "/ch/one.bin", []byte{7}, "ch/one.bin", false},
		{"100 KiB", "/ch/k100.bin", upData(6, 100<<10), "ch/k100.bin", false},
		{"1.5 MiB", "/ch/m15.bin", upData(7, 3<<19+3), "ch/m15.bin", false},
		{"empty", "/ch/empty.bin", []byte{}, "ch/empty.bin", false},
		{"with gz", "/ch/z.txt?gz", upText(300 << 10), "ch/z.txt.gz", true},
		{"into a new folder with ck=sha256", "/ch/new/n.bin?ck=sha256", upData(8, 70000), "ch/new/n.bin", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sep := "?"
			if strings.Contains(c.path, "?") {
				sep = "&"
			}
			resp, body := upDoChunked(t, s, "PUT", c.path+sep+"j", c.data)
			wantStatus(t, resp, body, http.StatusCreated)
			ck := ""
			if _, v, ok := strings.Cut(c.path, "ck="); ok {
				ck = v
			}
			upCheckPutJSON(t, body, ck, c.data, s.URL+"/"+c.want)
			got := upRead(t, dir, c.want)
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
		resp, body := upRaw(t, s, []byte(raw))
		wantStatus(t, resp, body, http.StatusCreated)
		if string(body) != s.URL+"/ch/raw.txt" {
			t.Errorf("body: got %q, want %q", body, s.URL+"/ch/raw.txt")
		}
		upWantFile(t, dir, "ch/raw.txt", []byte("hello, world"))
	})
	upNoPartial(t, dir)
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
	f2 := file{"two.bin", upData(9, 700<<10)}
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
		{"single f, ?j", "/mp1/", "?j", nil, "", []file{f1}, "json", "", false, ""},
		{"several f in one request, ?j", "/mp2/", "?j", nil, "", []file{f1, f2, f3, f4}, "json", "", false, ""},
		{"leading act=bput", "/mp3/", "?j", nil, "bput", []file{f1, f2}, "json", "", false, ""},
		{"Accept application/json", "/mp4/", "", []string{"Accept: application/json"}, "bput", []file{f2}, "json", "", false, ""},
		{"Accept url", "/mp5/", "", []string{"Accept: url"}, "", []file{f1, f3}, "url", "", false, ""},
		{"default text", "/mp6/", "", nil, "bput", []file{f1, f2}, "text", "", false, ""},
		{"ck=md5", "/mp7/", "?j&ck=md5", nil, "", []file{f1, f2}, "json", "md5", false, ""},
		{"CK header b2s", "/mp8/", "?j", []string{"CK: b2s"}, "", []file{f1}, "json", "b2s", false, ""},
		{"ck=no", "/mp9/", "?j&ck=no", nil, "", []file{f1, f2}, "json", "no", false, ""},
		{"into missing nested folders", "/mp10/new/deeper/", "?j", nil, "", []file{f1}, "json", "", false, ""},
		{"folder without trailing slash", "/mp11", "?j", nil, "", []file{f3}, "json", "", false, ""},
		{"existing name is renamed", "/mp12/", "?j", nil, "", []file{f1}, "json", "", true, "rename"},
		{"replace with d", "/mp13/", "?j&replace", []string{"PW: edpass"}, "", []file{f1}, "json", "", true, "replace"},
		{"Replace header with d", "/mp14/", "?j", []string{"PW: edpass", "Replace: 1"}, "bput", []file{f1, f2}, "json", "", true, "replace"},
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
			var parts []upPart
			if c.act != "" {
				parts = append(parts, upPart{"act", "", []byte(c.act)})
			}
			var total int64
			for _, f := range c.files {
				parts = append(parts, upPart{"f", f.name, f.data})
				total += int64(len(f.data))
			}
			form, ct := upForm(t, parts...)
			resp, body := s.do(t, "POST", c.folder+c.query, form, append(c.hdr, ct)...)
			wantStatus(t, resp, body, http.StatusCreated)
			var urls []string
			switch c.form {
			case "json":
				var r upMPReply
				keys := upDecode(t, body, &r)
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
						sum := upSums(t, wantCK, f.data)
						if got.SHA512 != sum.full || got.ShaB64 != sum.b64 {
							t.Errorf("files[%d] sha512, sha_b64: got %q, %q, want %q, %q", i, got.SHA512, got.ShaB64, sum.full, sum.b64)
						}
					}
					if got.FnOrig != f.name {
						t.Errorf("files[%d] fn_orig: got %q, want %q", i, got.FnOrig, f.name)
					}
					rel := upRel(t, s, got.URL)
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
					if sum := upSums(t, "sha512", f.data); !strings.Contains(string(body), sum.b64) {
						t.Errorf("text reply: got %q, want it to carry checksum %s", body, sum.b64)
					}
					urls = append(urls, u)
				}
			}
			for i, f := range c.files {
				rel := upRel(t, s, urls[i])
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
					re := regexp.MustCompile("^" + regexp.QuoteMeta(folder+f.name) + "-" + upTagRE + regexp.QuoteMeta(ext) + "$")
					if !re.MatchString(rel) {
						t.Errorf("renamed path: got %q, want it to match %s", rel, re)
					}
					upWantFile(t, dir, folder+f.name, orig)
				}
				upWantFile(t, dir, rel, f.data)
			}
		})
	}
	t.Run("a plain field after act is ignored", func(t *testing.T) {
		form, ct := upForm(t, upPart{"act", "", []byte("bput")}, upPart{"note", "", []byte("hi")}, upPart{"f", "n.txt", []byte("n")})
		resp, body := s.do(t, "POST", "/mp20/?j", form, ct)
		wantStatus(t, resp, body, http.StatusCreated)
		upWantFile(t, dir, "mp20/n.txt", []byte("n"))
	})
	t.Run("multipart rand", func(t *testing.T) {
		form, ct := upForm(t, upPart{"f", "pic.png", []byte("png")})
		resp, body := s.do(t, "POST", "/mp21/?rand=7", form, ct, "Accept: url")
		wantStatus(t, resp, body, http.StatusCreated)
		rel := upRel(t, s, string(body))
		if !regexp.MustCompile(`^mp21/[A-Za-z0-9_-]{7}\.png$`).MatchString(rel) {
			t.Errorf("random name: got %q, want mp21/<7 chars>.png", rel)
		}
		upWantFile(t, dir, rel, []byte("png"))
	})
	upNoPartial(t, dir)
}
