package e2e

// Volumes on S3-compatible object storage (docs/s3.md, issue 21), against
// a real MinIO (minio_test.go).

import (
	"bytes"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"hoard/internal/miniotest"
)

// startS3 starts MinIO with the bucket "vol" and hoard with the volume
// /s3 on it (key prefix "pre"), readable by everyone, writable and
// deletable by u.
func startS3(t *testing.T, extra ...string) (*server, *miniotest.Server, string) {
	t.Helper()
	m := startMinio(t, "vol")
	auth := basicAuth("u:pw")
	args := append([]string{"-a", "u:pw", "-v", t.TempDir() + ":s3:r:rwmd,u:c,s3=vol/pre"}, extra...)
	s := start(t, args...)
	return s, m, auth
}

func TestS3PutGetListDelete(t *testing.T) {
	s, m, auth := startS3(t)

	// PUT: the object lands under the prefix, byte for byte, and the
	// reply's checksum is of those bytes.
	data := seededBytes(1, 300_000)
	resp, body := s.do(t, "PUT", "/s3/docs/a.bin", data, auth)
	wantStatus(t, resp, body, http.StatusCreated)
	sum := sha512.Sum512(data)
	if !strings.Contains(string(body), hex.EncodeToString(sum[:])[:20]) {
		t.Errorf("PUT reply does not carry the SHA-512 of the body: %s", body)
	}
	if got, ok := m.Object(t, "vol", "pre/docs/a.bin"); !ok || !bytes.Equal(got, data) {
		t.Fatalf("object pre/docs/a.bin: ok=%v, %d bytes, want the %d bytes sent", ok, len(got), len(data))
	}

	// GET whole, with the object's ETag; HEAD the same headers.
	oi, err := m.Client.StatObject(context.Background(), "vol", "pre/docs/a.bin", minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	etag := `"` + strings.Trim(oi.ETag, `"`) + `"`
	resp, body = s.do(t, "GET", "/s3/docs/a.bin", nil)
	wantStatus(t, resp, body, http.StatusOK)
	if !bytes.Equal(body, data) {
		t.Fatalf("GET gave %d bytes, want the %d uploaded", len(body), len(data))
	}
	if resp.Header.Get("ETag") != etag || resp.Header.Get("Accept-Ranges") != "bytes" {
		t.Errorf("ETag %q (want %q), Accept-Ranges %q", resp.Header.Get("ETag"), etag, resp.Header.Get("Accept-Ranges"))
	}
	resp, body = s.do(t, "HEAD", "/s3/docs/a.bin", nil)
	wantStatus(t, resp, body, http.StatusOK)
	if resp.ContentLength != int64(len(data)) || resp.Header.Get("ETag") != etag {
		t.Errorf("HEAD: length %d, ETag %q", resp.ContentLength, resp.Header.Get("ETag"))
	}

	// Ranges: a middle, a suffix, past the end.
	resp, body = s.do(t, "GET", "/s3/docs/a.bin", nil, "Range: bytes=1000-1999")
	wantStatus(t, resp, body, http.StatusPartialContent)
	if !bytes.Equal(body, data[1000:2000]) || resp.Header.Get("Content-Range") != "bytes 1000-1999/300000" {
		t.Errorf("range 1000-1999: %d bytes, Content-Range %q", len(body), resp.Header.Get("Content-Range"))
	}
	resp, body = s.do(t, "GET", "/s3/docs/a.bin", nil, "Range: bytes=-7")
	wantStatus(t, resp, body, http.StatusPartialContent)
	if !bytes.Equal(body, data[len(data)-7:]) {
		t.Errorf("suffix range: got %x", body)
	}
	resp, body = s.do(t, "GET", "/s3/docs/a.bin", nil, "Range: bytes=400000-")
	wantStatus(t, resp, body, http.StatusRequestedRangeNotSatisfiable)

	// Conditional requests by the object's validators.
	resp, body = s.do(t, "GET", "/s3/docs/a.bin", nil, "If-None-Match: "+etag)
	wantStatus(t, resp, body, http.StatusNotModified)
	resp, body = s.do(t, "GET", "/s3/docs/a.bin", nil, `If-None-Match: "other"`)
	wantStatus(t, resp, body, http.StatusOK)
	resp, body = s.do(t, "GET", "/s3/docs/a.bin", nil, "If-Modified-Since: "+oi.LastModified.Add(time.Hour).UTC().Format(http.TimeFormat))
	wantStatus(t, resp, body, http.StatusNotModified)
	resp, body = s.do(t, "GET", "/s3/docs/a.bin", nil, "Range: bytes=0-9", `If-Range: "stale"`)
	wantStatus(t, resp, body, http.StatusOK) // a stale If-Range gets the whole file

	// A taken name gets a collision name, as on disk; ?replace overwrites.
	resp, body = s.do(t, "PUT", "/s3/docs/a.bin", []byte("second"), auth)
	wantStatus(t, resp, body, http.StatusCreated)
	if got, _ := m.Object(t, "vol", "pre/docs/a.bin"); !bytes.Equal(got, data) {
		t.Fatal("a second PUT to a taken name overwrote it")
	}
	resp, body = s.do(t, "PUT", "/s3/docs/c.txt", []byte("old"), auth)
	wantStatus(t, resp, body, http.StatusCreated)
	resp, body = s.do(t, "PUT", "/s3/docs/c.txt?replace", []byte("new"), auth)
	wantStatus(t, resp, body, http.StatusCreated)
	if got, _ := m.Object(t, "vol", "pre/docs/c.txt"); string(got) != "new" {
		t.Errorf("?replace left %q", got)
	}

	// Multipart, as a browser form sends it.
	mp, ct := multipartFiles(t, [2]string{"form.txt", "from a form"})
	resp, body = s.do(t, "POST", "/s3/docs/", mp, ct, auth)
	wantStatus(t, resp, body, http.StatusCreated)
	if got, ok := m.Object(t, "vol", "pre/docs/form.txt"); !ok || string(got) != "from a form" {
		t.Errorf("multipart upload: object %q, %v", got, ok)
	}

	// Listings: ?ls, ?ls=t, HTML; folders from common prefixes (and from
	// a marker object another S3 client made), names hoard would not
	// serve left out.
	m.Put(t, "vol", "pre/empty/", nil)
	m.Put(t, "vol", "pre/.hist/secret", []byte("x"))
	m.Put(t, "vol", "pre/x.PARTIAL", []byte("x"))
	m.Put(t, "vol", "pre/top.txt", []byte("top"))
	l := getListing(t, s, "/s3/?ls")
	dirs, files := listingNames(t, l)
	if !slices.Equal(dirs, []string{"docs", "empty"}) || !slices.Equal(files, []string{"top.txt"}) {
		t.Errorf("listing of /s3/: dirs %q files %q", dirs, files)
	}
	l = getListing(t, s, "/s3/docs/?ls")
	_, files = listingNames(t, l)
	if len(files) != 4 || !slices.Contains(files, "a.bin") || !slices.Contains(files, "form.txt") {
		t.Errorf("listing of /s3/docs/: %q", files)
	}
	for _, e := range l.Files {
		if e.Name == "a.bin" && e.Sz != int64(len(data)) {
			t.Errorf("a.bin listed with size %d", e.Sz)
		}
	}
	if l := getListing(t, s, "/s3/empty/?ls"); len(l.Dirs)+len(l.Files) != 0 {
		t.Errorf("empty folder lists %+v", l)
	}
	resp, body = s.do(t, "GET", "/s3/?ls=t", nil)
	wantStatus(t, resp, body, http.StatusOK)
	if !strings.Contains(string(body), "top.txt") || strings.Contains(string(body), "PARTIAL") {
		t.Errorf("?ls=t: %s", body)
	}
	resp, body = s.do(t, "GET", "/s3/docs/", nil)
	wantStatus(t, resp, body, http.StatusOK)
	if !strings.Contains(string(body), "form.txt") {
		t.Errorf("HTML listing lacks form.txt")
	}
	for _, p := range []string{"/s3/nope/?ls", "/s3/nope.txt", "/s3/.hist/secret", "/s3/x.PARTIAL"} {
		resp, body = s.do(t, "GET", p, nil)
		wantStatus(t, resp, body, http.StatusNotFound)
	}

	// Folders as S3 tools make them: a marker object; again is 409.
	form, fct := multipartForm(t, formPart{"act", "", []byte("mkdir")}, formPart{"name", "", []byte("made here")})
	resp, body = s.do(t, "POST", "/s3/docs/", form, fct, auth)
	wantStatus(t, resp, body, http.StatusCreated)
	if got := resp.Header.Get("X-New-Dir"); got != "/s3/docs/made%20here" {
		t.Errorf("X-New-Dir = %q", got)
	}
	if _, ok := m.Object(t, "vol", "pre/docs/made here/"); !ok {
		t.Error("mkdir made no marker object")
	}
	resp, body = s.do(t, "POST", "/s3/docs/", form, fct, auth)
	wantStatus(t, resp, body, http.StatusConflict)
	resp, body = s.do(t, "POST", "/s3/", []byte("act=mkdir&name=a%2Fb%2Fc"), "Content-Type: application/x-www-form-urlencoded", auth)
	wantStatus(t, resp, body, http.StatusCreated)
	if l := getListing(t, s, "/s3/a/b/?ls"); len(l.Dirs) != 1 || l.Dirs[0].Name != "c" {
		t.Errorf("listing of a made folder's parent: %+v", l.Dirs)
	}

	// WebDAV reads the same listing.
	resp, body = s.do(t, "PROPFIND", "/s3/docs/", nil, "Depth: 1", auth)
	wantStatus(t, resp, body, http.StatusMultiStatus)
	if !strings.Contains(string(body), "/s3/docs/form.txt") || !strings.Contains(string(body), "made%20here") {
		t.Errorf("PROPFIND /s3/docs/: %.500s", body)
	}

	// WebDAV writes go through the same operations.
	resp, body = s.do(t, "MKCOL", "/s3/dav", nil, auth)
	wantStatus(t, resp, body, http.StatusCreated)
	resp, body = s.do(t, "PUT", "/s3/dav/w.txt", []byte("by webdav"), auth)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusNoContent {
		t.Errorf("DAV PUT: %d %s", resp.StatusCode, body)
	}
	if got, ok := m.Object(t, "vol", "pre/dav/w.txt"); !ok || string(got) != "by webdav" {
		t.Errorf("DAV PUT stored %q, %v", got, ok)
	}
	resp, body = s.do(t, "DELETE", "/s3/dav", nil, auth)
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
		t.Errorf("DAV DELETE: %d %s", resp.StatusCode, body)
	}
	if _, ok := m.Object(t, "vol", "pre/dav/w.txt"); ok {
		t.Error("DAV DELETE left the file")
	}
	resp, body = s.do(t, "COPY", "/s3/docs/form.txt", nil, auth, "Destination: "+s.URL+"/s3/docs/copied.txt")
	wantStatus(t, resp, body, http.StatusCreated)
	if got, ok := m.Object(t, "vol", "pre/docs/copied.txt"); !ok || string(got) != "from a form" {
		t.Errorf("DAV COPY stored %q, %v", got, ok)
	}
	// Objects keep no dead properties and no settable time: PROPFIND
	// asking for them answers without, PROPPATCH is not built (501).
	resp, body = s.do(t, "PROPFIND", "/s3/docs/", []byte(`<D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>`), "Depth: 1", auth)
	wantStatus(t, resp, body, http.StatusMultiStatus)
	if !strings.Contains(string(body), "/s3/docs/form.txt") {
		t.Errorf("PROPFIND allprop /s3/docs/: %.500s", body)
	}
	resp, body = s.do(t, "PROPPATCH", "/s3/docs/form.txt", []byte(`<D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:z"><D:set><D:prop><Z:a>1</Z:a></D:prop></D:set></D:propertyupdate>`), auth)
	wantStatus(t, resp, body, http.StatusNotImplemented)

	// Delete one file.
	resp, body = s.do(t, "POST", "/s3/docs/c.txt?delete", nil, auth)
	wantStatus(t, resp, body, http.StatusOK)
	if _, ok := m.Object(t, "vol", "pre/docs/c.txt"); ok {
		t.Error("deleted object still there")
	}
	resp, body = s.do(t, "GET", "/s3/docs/c.txt", nil)
	wantStatus(t, resp, body, http.StatusNotFound)

	// Delete a folder: every key below it, nothing beside it.
	for _, p := range []string{"/s3/tree/x/1.txt", "/s3/tree/2.txt", "/s3/treetop.txt"} {
		resp, body = s.do(t, "PUT", p, []byte("t"), auth)
		wantStatus(t, resp, body, http.StatusCreated)
	}
	resp, body = s.do(t, "POST", "/s3/tree/", []byte("act=mkdir&name=empty"), "Content-Type: application/x-www-form-urlencoded", auth)
	wantStatus(t, resp, body, http.StatusCreated)
	resp, body = s.do(t, "POST", "/s3/tree?delete", nil, auth)
	wantStatus(t, resp, body, http.StatusOK)
	if !strings.HasPrefix(string(body), "deleted 2 files") {
		t.Errorf("folder delete reply %q", body)
	}
	for _, k := range m.Keys(t, "vol") {
		if strings.HasPrefix(k, "pre/tree/") {
			t.Errorf("key %s left after deleting its folder", k)
		}
	}
	if _, ok := m.Object(t, "vol", "pre/treetop.txt"); !ok {
		t.Error("deleting /s3/tree took /s3/treetop.txt along")
	}
	resp, body = s.do(t, "GET", "/s3/tree/?ls", nil)
	wantStatus(t, resp, body, http.StatusNotFound)
}

// A large body of unknown length streams into a multipart upload of
// several parts, byte-identical, and ?gz compresses on the way.
func TestS3LargeStreamed(t *testing.T) {
	s, m, auth := startS3(t)
	data := seededBytes(2, 40<<20+12345) // three 16 MiB parts
	resp, body := doChunked(t, s, "PUT", "/s3/big.bin", data, auth)
	wantStatus(t, resp, body, http.StatusCreated)
	got, ok := m.Object(t, "vol", "pre/big.bin")
	if !ok || !bytes.Equal(got, data) {
		t.Fatalf("object: ok=%v, %d bytes, want %d identical", ok, len(got), len(data))
	}
	oi, err := m.Client.StatObject(context.Background(), "vol", "pre/big.bin", minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(oi.ETag, "-") {
		t.Errorf("ETag %q: not a multipart upload's", oi.ETag)
	}
	resp, body = s.do(t, "GET", "/s3/big.bin", nil, "Range: bytes=20000000-20000099")
	wantStatus(t, resp, body, http.StatusPartialContent)
	if !bytes.Equal(body, data[20000000:20000100]) {
		t.Error("range across a part boundary differs")
	}
	resp, body = s.do(t, "PUT", "/s3/z.txt?gz", bytes.Repeat([]byte("squeeze "), 1000), auth)
	wantStatus(t, resp, body, http.StatusCreated)
	if z, ok := m.Object(t, "vol", "pre/z.txt.gz"); !ok || len(z) > 1000 || z[0] != 0x1f {
		t.Errorf("?gz: object %d bytes, ok=%v", len(z), ok)
	}
	if inc := m.Incomplete(t, "vol"); len(inc) != 0 {
		t.Errorf("incomplete multipart uploads left: %q", inc)
	}
}

// Bad input and missing permissions change nothing in the bucket; what
// is not built yet for S3 volumes is a clear 501 that changes nothing.
func TestS3RefusedChangesNothing(t *testing.T) {
	m := startMinio(t, "vol")
	auth := basicAuth("u:pw")
	s := start(t, "-a", "u:pw", "-v", t.TempDir()+":s3:r:rwmd,u:c,s3=vol:c,sz=10-100k")
	m.Put(t, "vol", "keep.txt", []byte("keep"))
	m.Put(t, "vol", "afile", []byte("a file"))
	before := m.Keys(t, "vol")

	check := func(what string, code int, resp *http.Response, body []byte) {
		t.Helper()
		if resp.StatusCode != code {
			t.Errorf("%s: status %d, want %d: %s", what, resp.StatusCode, code, body)
		}
	}
	resp, body := s.do(t, "PUT", "/s3/anon.txt", []byte("0123456789ab"))
	check("anonymous PUT", http.StatusUnauthorized, resp, body)
	resp, body = s.do(t, "POST", "/s3/keep.txt?delete", nil)
	check("anonymous delete", http.StatusUnauthorized, resp, body)
	resp, body = s.do(t, "PUT", "/s3/small.txt", []byte("tiny"), auth)
	check("below sz", http.StatusBadRequest, resp, body) // as on disk
	resp, body = doChunked(t, s, "PUT", "/s3/large.bin", seededBytes(3, 200_000), auth)
	check("above sz, streamed", http.StatusRequestEntityTooLarge, resp, body)
	resp, body = s.do(t, "PUT", "/s3/.hist/x.txt", []byte("0123456789ab"), auth)
	check("into .hist", http.StatusForbidden, resp, body)
	resp, body = s.do(t, "PUT", "/s3/w.PARTIAL", []byte("0123456789ab"), auth)
	check("a work-file name", http.StatusBadRequest, resp, body)
	resp, body = s.do(t, "PUT", "/s3/bad%01name.txt", []byte("0123456789ab"), auth)
	check("a control character", http.StatusBadRequest, resp, body)
	resp, body = s.do(t, "PUT", "/s3/afile/inside.txt", []byte("0123456789ab"), auth)
	check("below a file", http.StatusBadRequest, resp, body) // as on disk
	resp, body = s.do(t, "PUT", "/s3/keep.txt?apnd", []byte("tiny"), auth)
	check("append below sz", http.StatusBadRequest, resp, body)
	resp, body = doChunked(t, s, "PUT", "/s3/keep.txt?apnd", seededBytes(3, 200_000), auth)
	check("append above sz, streamed", http.StatusRequestEntityTooLarge, resp, body)
	resp, body = s.do(t, "PUT", "/s3/keep.txt?apnd", []byte("0123456789ab"))
	check("anonymous append", http.StatusUnauthorized, resp, body)
	resp, body = s.do(t, "GET", "/s3/nope/?tar", nil)
	check("tar of nothing", http.StatusNotFound, resp, body)
	resp, body = s.do(t, "GET", "/s3/keep.txt?th", nil)
	check("thumbnail of a text file (the icon)", http.StatusOK, resp, body)
	resp, body = s.do(t, "POST", "/s3/keep.txt?move=/s3/afile", nil, auth)
	check("move onto a taken name", http.StatusConflict, resp, body)
	resp, body = s.do(t, "POST", "/s3/keep.txt?copy=/s3/afile/x", nil, auth)
	check("copy below a file", http.StatusConflict, resp, body)
	resp, body = s.do(t, "POST", "/s3/", []byte("act=mkdir&name=keep.txt"), "Content-Type: application/x-www-form-urlencoded", auth)
	check("mkdir over a file", http.StatusConflict, resp, body)
	resp, body = s.do(t, "POST", "/s3/afile/", []byte("act=mkdir&name=sub"), "Content-Type: application/x-www-form-urlencoded", auth)
	if resp.StatusCode < 400 {
		t.Errorf("mkdir below a file: %d %s", resp.StatusCode, body)
	}
	resp, body = s.do(t, "POST", "/s3/", []byte("act=mkdir&name=.hist"), "Content-Type: application/x-www-form-urlencoded", auth)
	if resp.StatusCode < 400 {
		t.Errorf("mkdir .hist: %d %s", resp.StatusCode, body)
	}
	resp, body = s.do(t, "POST", "/s3/", []byte("act=mkdir&name=nope"), "Content-Type: application/x-www-form-urlencoded")
	check("anonymous mkdir", http.StatusUnauthorized, resp, body)
	f := newUp2kFile(seededBytes(4, 200_000))
	resp, body = postHandshake(t, s, "/s3/", map[string]any{"name": "u.bin", "size": 200_000, "lmod": 1, "hash": f.hashes}, auth)
	check("up2k handshake above sz", http.StatusRequestEntityTooLarge, resp, body)

	if after := m.Keys(t, "vol"); !slices.Equal(before, after) {
		t.Errorf("refused requests changed the bucket: %q → %q", before, after)
	}
	if inc := m.Incomplete(t, "vol"); len(inc) != 0 {
		t.Errorf("incomplete multipart uploads left: %q", inc)
	}
}

// A store that is down is a 503 with Retry-After, and hoard recovers by
// itself when it is back.
func TestS3StoreDown(t *testing.T) {
	s, m, auth := startS3(t)
	resp, body := s.do(t, "PUT", "/s3/a.txt", []byte("before"), auth)
	wantStatus(t, resp, body, http.StatusCreated)
	m.Halt()
	for _, r := range []struct{ method, path string }{{"GET", "/s3/a.txt"}, {"GET", "/s3/?ls"}, {"PUT", "/s3/b.txt"}} {
		resp, body = s.do(t, r.method, r.path, []byte("during"), auth)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s with the store down: %d, Retry-After %q: %s", r.method, r.path, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	m.Run(t)
	_, body = waitServed(t, s, "/s3/a.txt", 30*time.Second)
	if string(body) != "before" {
		t.Errorf("after recovery: %q", body)
	}
	if _, ok := m.Object(t, "vol", "pre/b.txt"); ok {
		t.Error("the PUT refused while the store was down left an object")
	}
}

// Start-up refuses what an S3 volume cannot do, naming it.
func TestS3BadConfig(t *testing.T) {
	startMinio(t, "vol")
	for _, c := range []struct{ flags, want string }{
		{"c,s3=Bad_Bucket", "bucket name"},
		{"c,s3=vol/../x", "prefix"},
		{"c,s3=nosuch", "does not exist"},
	} {
		code, _, stderr := runHoard(t, "-v", t.TempDir()+":s3:r:"+c.flags)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want an error naming %q", c.flags, code, stderr, c.want)
		}
	}
}

// Permissions on an S3 volume are those of a local one: g reads a file
// by its URL only, w uploads without seeing anything, nobody else gets
// in; the answers are the same as on a local volume with the same -v.
func TestS3Permissions(t *testing.T) {
	m := startMinio(t, "vol")
	local := t.TempDir()
	perms := ":g:rwmd,u:w,w"
	s := start(t, "-a", "u:pw", "-a", "w:wpw", "-v", t.TempDir()+":s3"+perms+":c,s3=vol", "-v", local+":loc"+perms)
	u, w := basicAuth("u:pw"), basicAuth("w:wpw")
	for _, vol := range []string{"/s3", "/loc"} {
		resp, body := s.do(t, "PUT", vol+"/f.txt", []byte("hello"), u)
		wantStatus(t, resp, body, http.StatusCreated)
	}
	if got, ok := m.Object(t, "vol", "f.txt"); !ok || string(got) != "hello" {
		t.Fatalf("object f.txt: %q %v", got, ok)
	}
	for _, c := range []struct {
		method, path, auth string
		body               []byte
	}{
		{"GET", "/f.txt", "", nil},                // g: by URL
		{"HEAD", "/f.txt", "", nil},               // g: by URL
		{"GET", "/nope.txt", "", nil},             // g: not there
		{"GET", "/?ls", "", nil},                  // g: no listing
		{"GET", "/f.txt", w, nil},                 // w: may not read (gets g as everyone does)
		{"GET", "/?ls", w, nil},                   // w: an empty listing
		{"PUT", "/g.txt", "", []byte("x")},        // anonymous: may not write
		{"POST", "/f.txt?delete", w, nil},         // w: may not delete
		{"POST", "/f.txt?copy=/s3/c.txt", w, nil}, // w: may not read to copy
		{"POST", "/f.txt?move=/s3/c.txt", w, nil}, // w: may not move
	} {
		var got [2]string
		for i, vol := range []string{"/s3", "/loc"} {
			var hdr []string
			if c.auth != "" {
				hdr = append(hdr, c.auth)
			}
			resp, body := s.do(t, c.method, vol+c.path, c.body, hdr...)
			got[i] = strconv.Itoa(resp.StatusCode) + " " + srvinfRE.ReplaceAllString(strings.ReplaceAll(string(body), vol, ""), "")
		}
		if got[0] != got[1] {
			t.Errorf("%s %s (auth %q): S3 volume answers %.200q, local %.200q", c.method, c.path, c.auth, got[0], got[1])
		}
	}
	if keys := m.Keys(t, "vol"); !slices.Equal(keys, []string{"f.txt"}) {
		t.Errorf("bucket holds %q", keys)
	}
}

var srvinfRE = regexp.MustCompile(`"srvinf":"[^"]*"`) // free space: the bucket has none to tell

// A client that goes away mid-upload leaves nothing: no object, no
// multipart upload.
func TestS3ClientGoneMidUpload(t *testing.T) {
	s, m, auth := startS3(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "PUT /s3/gone.bin HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Length: 50000000\r\n\r\n", strings.TrimPrefix(auth, "Authorization: "))
	conn.Write(seededBytes(5, 20<<20)) // more than a part
	conn.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		keys, inc := m.Keys(t, "vol"), m.Incomplete(t, "vol")
		if len(keys) == 0 && len(inc) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the client left: objects %q, incomplete uploads %q", keys, inc)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// And the server is fine.
	resp, body := s.do(t, "PUT", "/s3/after.txt", []byte("ok"), auth)
	wantStatus(t, resp, body, http.StatusCreated)
}

// Two nodes on one bucket under fk give a file the same key: the secret
// lives in the bucket (written once by whichever node needs it first), so
// a link made through node A opens through node B; a wrong key, or the
// key of the file before it was replaced, opens nothing anywhere.
func TestS3FileKeysTwoNodes(t *testing.T) {
	m := startMinio(t, "vol")
	args := func() []string {
		return []string{"-a", "u:pw", "-v", t.TempDir() + ":s3:g:rwdG,u:c,s3=vol/pre:c,fk=8"}
	}
	a, b := start(t, args()...), start(t, args()...)
	put := func(s *server, data string) string {
		t.Helper()
		resp, body := s.do(t, "PUT", "/s3/shared.txt?j", []byte(data), basicAuth("u:pw"), "Replace: 1")
		wantStatus(t, resp, body, http.StatusCreated)
		var up struct{ URL string }
		if err := json.Unmarshal(body, &up); err != nil {
			t.Fatal(err)
		}
		k := fileKeyRE.FindStringSubmatch(up.URL)
		if k == nil {
			t.Fatalf("url = %q, want a ?k=", up.URL)
		}
		return k[1]
	}
	key := put(a, "first")
	for _, s := range []*server{a, b} {
		resp, body := s.do(t, "GET", "/s3/shared.txt?k="+key, nil)
		wantStatus(t, resp, body, http.StatusOK)
		if string(body) != "first" {
			t.Errorf("%s: body %q", s.URL, body)
		}
		resp, body = s.do(t, "GET", "/s3/shared.txt?k=AAAAAAAA", nil)
		if resp.StatusCode == http.StatusOK {
			t.Errorf("%s: a wrong key opened the file: %q", s.URL, body)
		}
	}
	// Replaced through B (same size): a new key, and the old one opens nothing.
	key2 := put(b, "again")
	if key2 == key {
		t.Fatalf("the replaced file kept its key %q", key)
	}
	for _, s := range []*server{a, b} {
		resp, body := s.do(t, "GET", "/s3/shared.txt?k="+key2, nil)
		wantStatus(t, resp, body, http.StatusOK)
		if string(body) != "again" {
			t.Errorf("%s: body %q", s.URL, body)
		}
		resp, body = s.do(t, "GET", "/s3/shared.txt?k="+key, nil)
		if resp.StatusCode == http.StatusOK {
			t.Errorf("%s: the old key opened the new file: %q", s.URL, body)
		}
	}
	// One secret in the bucket, unreachable by any URL.
	if _, ok := m.Object(t, "vol", "pre/.hist/secret"); !ok {
		t.Errorf("no secret object in the bucket")
	}
	if _, err := m.Client.StatObject(context.Background(), "vol", "pre/.hist/secret", minio.StatObjectOptions{}); err != nil {
		t.Errorf("the secret object: %v", err)
	}
	for _, s := range []*server{a, b} {
		resp, body := s.do(t, "GET", "/s3/.hist/secret", nil, basicAuth("u:pw"))
		if resp.StatusCode == http.StatusOK {
			t.Errorf("%s: the secret was served: %q", s.URL, body)
		}
	}
}

// S3 takes keys of at most 1024 bytes. A path whose key (prefix "pre/"
// included) is longer is refused with 400 by every write, and is not
// found by every read; nothing is written, and no request is a 500.
func TestS3LongNames(t *testing.T) {
	s, m, auth := startS3(t)
	d := strings.Repeat("a", 250)
	dir := "/" + d + "/" + d + "/" + d + "/" + d         // 1004 bytes of key with "pre/" and the last slash
	fits := dir + "/" + strings.Repeat("b", 12) + ".txt" // a key of 1024 bytes
	long := dir + "/" + strings.Repeat("b", 13) + ".txt" // 1025
	resp, body := s.do(t, "PUT", "/s3"+fits, []byte("fits"), auth)
	wantStatus(t, resp, body, http.StatusCreated)
	before := m.Keys(t, "vol")
	if !slices.Equal(before, []string{"pre" + fits}) {
		t.Fatalf("bucket holds %q", before)
	}
	form := "Content-Type: application/x-www-form-urlencoded"
	for _, c := range []struct {
		what, method, path string
		body               []byte
		hdr                []string
		want               int
	}{
		{"PUT", "PUT", long, []byte("long"), nil, http.StatusBadRequest},
		{"PUT, chunked", "PUT", long, nil, nil, http.StatusBadRequest},
		{"PUT below", "PUT", long + "/x", []byte("long"), nil, http.StatusBadRequest},
		{"multipart POST", "POST", dir + "/", nil, nil, http.StatusBadRequest},
		{"GET", "GET", long, nil, nil, http.StatusNotFound},
		{"HEAD", "HEAD", long, nil, nil, http.StatusNotFound},
		{"listing", "GET", long + "/?ls", nil, nil, http.StatusNotFound},
		{"tar", "GET", long + "/?tar", nil, nil, http.StatusNotFound},
		{"mkdir", "POST", dir + "/", []byte("act=mkdir&name=" + strings.Repeat("b", 12) + ".dir"), []string{form}, http.StatusBadRequest},
		{"move", "POST", fits + "?move=/s3" + long, nil, nil, http.StatusBadRequest},
		{"copy", "POST", fits + "?copy=/s3" + long, nil, nil, http.StatusBadRequest},
		{"delete", "POST", long + "?delete", nil, nil, http.StatusNotFound},
	} {
		hdr := append([]string{auth}, c.hdr...)
		switch c.what {
		case "PUT, chunked":
			resp, body = doChunked(t, s, c.method, "/s3"+c.path, []byte("long, in chunks"), hdr...)
		case "multipart POST":
			mb, ct := multipartFiles(t, [2]string{strings.Repeat("b", 13) + ".txt", "long"})
			resp, body = s.do(t, c.method, "/s3"+c.path, mb, append(hdr, ct)...)
		default:
			resp, body = s.do(t, c.method, "/s3"+c.path, c.body, hdr...)
		}
		if resp.StatusCode != c.want {
			t.Errorf("%s of a path too long for a key: %d, want %d: %.200s", c.what, resp.StatusCode, c.want, body)
		}
	}
	f := newUp2kFile(seededBytes(5, 300_000))
	resp, body = postHandshake(t, s, "/s3"+dir+"/", map[string]any{"name": strings.Repeat("b", 13) + ".txt", "size": len(f.data), "lmod": 1, "hash": f.hashes}, auth)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("up2k handshake of a path too long for a key: %d: %.200s", resp.StatusCode, body)
	}
	if after := m.Keys(t, "vol"); !slices.Equal(before, after) {
		t.Errorf("refused requests changed the bucket: %q → %q", before, after)
	}
	if inc := m.Incomplete(t, "vol"); len(inc) != 0 {
		t.Errorf("incomplete multipart uploads left: %q", inc)
	}
	resp, body = s.do(t, "GET", "/s3"+fits, nil)
	if resp.StatusCode != http.StatusOK || string(body) != "fits" {
		t.Errorf("GET of a path of 1024 bytes of key: %d %q", resp.StatusCode, body)
	}
}

// MinIO keeps a folder marker "a/" as "a__XLDIR__": a file of that name
// became the marker (listed as a folder, the file gone from view), and
// files below such a folder were left out of every listing (hidden from
// listings, archives, the index and folder deletes, yet served by their
// URL). Such names are refused on S3 volumes with 400 by every write, and
// nothing is stored; a name with the suffix elsewhere is an ordinary one.
func TestS3StoreReservedNames(t *testing.T) {
	m := startMinio(t, "vol")
	auth := basicAuth("u:pw")
	loc := t.TempDir()
	s := start(t, "-a", "u:pw", "-v", t.TempDir()+":s3:r:rwmd,u:c,s3=vol/pre", "-v", loc+":loc:r:rwmd,u")
	resp, body := s.do(t, "PUT", "/s3/keep.txt", []byte("keep"), auth)
	wantStatus(t, resp, body, http.StatusCreated)
	resp, body = s.do(t, "PUT", "/loc/d__XLDIR__", []byte("on disk"), auth)
	wantStatus(t, resp, body, http.StatusCreated)
	resp, body = s.do(t, "PUT", "/loc/t/f.txt", []byte("on disk"), auth)
	wantStatus(t, resp, body, http.StatusCreated)
	resp, body = s.do(t, "PUT", "/loc/t/g__XLDIR__", []byte("on disk"), auth)
	wantStatus(t, resp, body, http.StatusCreated)
	before := m.Keys(t, "vol")
	form := "Content-Type: application/x-www-form-urlencoded"
	for _, c := range []struct {
		what, method, path string
		body               []byte
		hdr                []string
	}{
		{"PUT", "PUT", "/s3/g__XLDIR__", []byte("x"), nil},
		{"PUT below", "PUT", "/s3/h__XLDIR__/secret.txt", []byte("x"), nil},
		{"PUT into a folder", "PUT", "/s3/h__XLDIR__/", []byte("x"), nil},
		{"mkdir", "POST", "/s3/", []byte("act=mkdir&name=m__XLDIR__"), []string{form}},
		{"move", "POST", "/s3/keep.txt?move=/s3/k__XLDIR__", nil, nil},
		{"copy", "POST", "/s3/keep.txt?copy=/s3/k__XLDIR__/keep.txt", nil, nil},
		{"copy from disk", "POST", "/loc/d__XLDIR__?copy=/s3/d.txt", nil, nil},
		{"copy of a folder from disk", "POST", "/loc/t?copy=/s3/t", nil, nil},
	} {
		resp, body := s.do(t, c.method, c.path, c.body, append([]string{auth}, c.hdr...)...)
		switch {
		case c.what == "copy from disk" && resp.StatusCode == http.StatusCreated:
			// the destination's name is an ordinary one: fine
		case c.what == "copy of a folder from disk" && resp.StatusCode == http.StatusConflict:
			// in part, and says so; nothing hidden (checked below)
		case resp.StatusCode != http.StatusBadRequest:
			t.Errorf("%s of a name ending in __XLDIR__: %d, want 400: %.200s", c.what, resp.StatusCode, body)
		}
	}
	f := newUp2kFile(seededBytes(6, 300_000))
	resp, body = postHandshake(t, s, "/s3/", map[string]any{"name": "u__XLDIR__", "size": len(f.data), "lmod": 1, "hash": f.hashes}, auth)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("up2k handshake of a name ending in __XLDIR__: %d: %.200s", resp.StatusCode, body)
	}
	f = newUp2kFile(seededBytes(7, 300_000))
	resp, body = postHandshake(t, s, "/s3/v__XLDIR__/", map[string]any{"name": "u.bin", "size": len(f.data), "lmod": 1, "hash": f.hashes}, auth)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("up2k handshake into a folder ending in __XLDIR__: %d: %.200s", resp.StatusCode, body)
	}
	// What was taken: the file from disk at an ordinary name, and the
	// folder from disk up to the name refused (sorted: f.txt first).
	want := append(slices.Clone(before), "pre/d.txt", "pre/t/", "pre/t/f.txt")
	slices.Sort(want)
	if after := m.Keys(t, "vol"); !slices.Equal(after, want) {
		t.Errorf("bucket %q, want %q", after, want)
	}
	resp, body = s.do(t, "PUT", "/s3/a__XLDIR__b.txt", []byte("ordinary"), auth)
	wantStatus(t, resp, body, http.StatusCreated)
	if got, ok := m.Object(t, "vol", "pre/a__XLDIR__b.txt"); !ok || string(got) != "ordinary" {
		t.Errorf("an ordinary name with __XLDIR__ inside: %q %v", got, ok)
	}
	if inc := m.Incomplete(t, "vol"); len(inc) != 0 {
		t.Errorf("incomplete multipart uploads left: %q", inc)
	}
}
