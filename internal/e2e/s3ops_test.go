package e2e

// Move, copy, archives, shares, unpost, lifetimes and append on volumes
// on object storage (docs/s3.md, issue 21), each against the same on a
// local volume: the same requests get the same statuses.

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// parity runs the same request on the S3 volume /s3 and the local /loc
// (VOL in path, body and headers stands for the volume) and wants the
// same status from both, and want when not 0.
func parity(t *testing.T, s *server, want int, method, p string, body []byte, hdr ...string) {
	t.Helper()
	var got [2]int
	var bodies [2]string
	for i, vol := range []string{"/s3", "/loc"} {
		h := make([]string, len(hdr))
		for j, x := range hdr {
			h[j] = strings.ReplaceAll(x, "VOL", vol)
		}
		resp, b := s.do(t, method, strings.ReplaceAll(p, "VOL", vol), []byte(strings.ReplaceAll(string(body), "VOL", vol)), h...)
		got[i], bodies[i] = resp.StatusCode, string(b)
	}
	if got[0] != got[1] || want != 0 && got[0] != want {
		t.Errorf("%s %s: S3 volume %d %.200q, local %d %.200q (want %d)", method, p, got[0], bodies[0], got[1], bodies[1], want)
	}
}

// Move and copy of files and folders on an S3 volume: server-side
// copies, metadata kept, no clobbering, the statuses a local volume gives
// for the same requests, nothing lost.
func TestS3MoveCopy(t *testing.T) {
	m := startMinio(t, "vol")
	m.MakeBuckets(t, "other")
	u := basicAuth("u:pw")
	s := start(t, "-a", "u:pw", "-a", "r:rpw",
		"-v", t.TempDir()+":s3:r:rwmd,u:c,s3=vol/pre",
		"-v", t.TempDir()+":loc:r:rwmd,u",
		"-v", t.TempDir()+":s3b:r:rwmd,u:c,s3=other")
	for _, f := range []string{"/a/f.txt", "/a/sub/g.txt", "/b.txt", "/keep/k.txt"} {
		parity(t, s, http.StatusCreated, "PUT", "VOL"+f, []byte("data of "+f), u)
	}
	parity(t, s, http.StatusCreated, "POST", "VOL/", []byte("act=mkdir&name=a/empty"), "Content-Type: application/x-www-form-urlencoded", u)

	parity(t, s, http.StatusCreated, "POST", "VOL/a/f.txt?copy=VOL/c/f2.txt", nil, u) // parents made
	parity(t, s, http.StatusOK, "GET", "VOL/c/f2.txt", nil)
	parity(t, s, http.StatusConflict, "POST", "VOL/a/f.txt?copy=VOL/b.txt", nil, u)        // taken
	parity(t, s, http.StatusCreated, "POST", "VOL/a/f.txt?copy=VOL/b.txt&replace", nil, u) // replaced
	parity(t, s, http.StatusNotFound, "POST", "VOL/nope.txt?move=VOL/x.txt", nil, u)       // no source
	parity(t, s, http.StatusBadRequest, "POST", "VOL/a?move=VOL/a/inner", nil, u)          // into itself
	parity(t, s, http.StatusBadRequest, "POST", "VOL/a/f.txt?move=VOL/a/f.txt", nil, u)    // the same
	parity(t, s, http.StatusBadRequest, "POST", "VOL/a/f.txt?move=VOL/x.PARTIAL", nil, u)  // a work-file name
	parity(t, s, http.StatusForbidden, "POST", "VOL/a/f.txt?move=VOL/.hist/x", nil, u)     // the state folder
	parity(t, s, http.StatusConflict, "POST", "VOL/a/f.txt?move=VOL/b.txt/in.txt", nil, u) // a file on the way
	parity(t, s, http.StatusUnauthorized, "POST", "VOL/a/f.txt?move=VOL/z.txt", nil)       // anonymous
	parity(t, s, http.StatusForbidden, "POST", "VOL/a/f.txt?move=VOL/z.txt", nil, basicAuth("r:rpw"))
	parity(t, s, http.StatusBadRequest, "POST", "VOL/?move=VOL/zz", nil, u)      // the top folder
	parity(t, s, http.StatusConflict, "POST", "VOL/b.txt?move=VOL/keep", nil, u) // a folder is there

	// A folder, whole: every file, the empty folder inside, metadata.
	parity(t, s, http.StatusCreated, "POST", "VOL/a?move=VOL/m", nil, u)
	parity(t, s, http.StatusNotFound, "GET", "VOL/a/f.txt", nil)
	parity(t, s, http.StatusOK, "GET", "VOL/m/sub/g.txt", nil)
	parity(t, s, http.StatusOK, "GET", "VOL/m/empty/?ls", nil)
	parity(t, s, http.StatusCreated, "POST", "VOL/m?copy=VOL/m2", nil, u)
	parity(t, s, http.StatusConflict, "POST", "VOL/m2?copy=VOL/m", nil, u)
	parity(t, s, http.StatusCreated, "POST", "VOL/m2/sub/g.txt?move=VOL/g.txt", nil, u)
	parity(t, s, http.StatusOK, "GET", "VOL/m2/sub/?ls", nil) // emptied by the move, still there
	parity(t, s, http.StatusCreated, "POST", "VOL/m2?move=VOL/keep&replace", nil, u)

	// WebDAV MOVE and COPY go the same way.
	parity(t, s, http.StatusCreated, "MOVE", "VOL/keep/f.txt", nil, u, "Destination: "+s.URL+"VOL/keep/f3.txt")
	parity(t, s, http.StatusPreconditionFailed, "COPY", "VOL/keep/f3.txt", nil, u, "Destination: "+s.URL+"VOL/g.txt", "Overwrite: F")
	parity(t, s, http.StatusNoContent, "COPY", "VOL/keep/f3.txt", nil, u, "Destination: "+s.URL+"VOL/g.txt")
	parity(t, s, http.StatusConflict, "MOVE", "VOL/g.txt", nil, u, "Destination: "+s.URL+"VOL/no/such/g.txt")

	// The bucket holds what the local volume does, byte for byte.
	want := map[string]string{
		"pre/b.txt": "data of /a/f.txt", "pre/c/f2.txt": "data of /a/f.txt", "pre/g.txt": "data of /a/f.txt",
		"pre/m/f.txt": "data of /a/f.txt", "pre/m/sub/g.txt": "data of /a/sub/g.txt", "pre/m/empty/": "",
		"pre/keep/f3.txt": "data of /a/f.txt", "pre/keep/empty/": "", "pre/keep/sub/": "",
	}
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if got := m.Keys(t, "vol"); !slices.Equal(got, keys) {
		t.Errorf("bucket keys %q, want %q", got, keys)
	}
	for k, v := range want {
		if got, ok := m.Object(t, "vol", k); !ok || string(got) != v {
			t.Errorf("object %s: %q %v, want %q", k, got, ok, v)
		}
		resp, body := s.do(t, "GET", "/loc/"+strings.TrimPrefix(k, "pre/"), nil)
		if !strings.HasSuffix(k, "/") && string(body) != v {
			t.Errorf("local /loc/%s: %d %q, want %q", strings.TrimPrefix(k, "pre/"), resp.StatusCode, body, v)
		}
	}
	// Object metadata travels with the copy: the uploader of the original.
	oi, err := m.Client.StatObject(context.Background(), "vol", "pre/m/sub/g.txt", minio.StatObjectOptions{})
	if err != nil || oi.UserMetadata["Hoard-Uploader"] != "u" || oi.UserMetadata["Hoard-At"] == "" {
		t.Errorf("moved object's metadata %v (%v): want the upload's", oi.UserMetadata, err)
	}

	// Between two S3 volumes (another bucket): server-side too.
	resp, body := s.do(t, "POST", "/s3/m?copy=/s3b/m", nil, u)
	wantStatus(t, resp, body, http.StatusCreated)
	resp, body = s.do(t, "POST", "/s3/g.txt?move=/s3b/g.txt", nil, u)
	wantStatus(t, resp, body, http.StatusCreated)
	if got := m.Keys(t, "other"); !slices.Equal(got, []string{"g.txt", "m/empty/", "m/f.txt", "m/sub/g.txt"}) {
		t.Errorf("bucket other: %q", got)
	}
	if _, ok := m.Object(t, "vol", "pre/g.txt"); ok {
		t.Error("a move to another bucket left its source")
	}
	if inc := m.Incomplete(t, "vol"); len(inc) != 0 {
		t.Errorf("unfinished uploads left: %q", inc)
	}
	_ = strconv.Itoa
}

// Archives of folders on an S3 volume (?tar, ?tar=pax,gz, ?zip, ?zip=crc,
// the POST selection) hold what the same archives of the same tree on a
// local volume hold, byte for byte; a large member streams across many
// reads; refusals are the local ones.
func TestS3Archives(t *testing.T) {
	m := startMinio(t, "vol")
	u := basicAuth("u:pw")
	s := start(t, "-a", "u:pw",
		"-v", t.TempDir()+":s3:rwmd,u:c,s3=vol/pre",
		"-v", t.TempDir()+":loc:rwmd,u")
	big := seededBytes(9, 3<<20+17)
	files := map[string][]byte{"/d/a.txt": []byte("alpha"), "/d/sub/b.txt": []byte("beta"), "/d/big.bin": big, "/d/.dot": []byte("dot"), "/d/empty.txt": {}}
	for p, b := range files {
		parity(t, s, http.StatusCreated, "PUT", "VOL"+p, b, u)
	}
	m.Put(t, "vol", "pre/d/.hist/secret", []byte("never archived"))
	m.Put(t, "vol", "pre/d/w.PARTIAL", []byte("never archived"))
	for _, q := range []string{"?tar", "?tar=pax,gz", "?zip", "?zip=crc"} {
		var got [2]string
		for i, vol := range []string{"/s3", "/loc"} {
			resp, body := s.do(t, "GET", vol+"/d/"+q, nil, u)
			wantStatus(t, resp, body, http.StatusOK)
			if strings.Contains(q, "gz") {
				body = gunzip(t, body)
			}
			var mem map[string][]byte
			if strings.HasPrefix(q, "?zip") {
				mem = unzipMembers(t, body)
			} else {
				mem = untarMembers(t, body)
			}
			if !bytes.Equal(mem["d/big.bin"], big) {
				t.Errorf("%s%s: d/big.bin is %d bytes, want the %d put", vol, q, len(mem["d/big.bin"]), len(big))
			}
			got[i] = sortedMembers(mem)
			for _, k := range slices.Sorted(maps.Keys(mem)) {
				got[i] += fmt.Sprintf(" %s=%x", k, sha512.Sum512(mem[k]))
			}
		}
		if got[0] != got[1] {
			t.Errorf("%s: S3 volume's archive %q, local %q", q, got[0], got[1])
		}
		if !strings.Contains(got[0], "d/sub/b.txt") || strings.Contains(got[0], "secret") || strings.Contains(got[0], "PARTIAL") {
			t.Errorf("%s: members %q", q, got[0])
		}
	}
	// A selection, as copyparty's browser posts it.
	var sel [2]string
	for i, vol := range []string{"/s3", "/loc"} {
		resp, body := s.do(t, "POST", vol+"/d/?tar", []byte(`["a.txt","sub"]`), u, "Content-Type: application/json")
		wantStatus(t, resp, body, http.StatusOK)
		sel[i] = sortedMembers(untarMembers(t, body))
	}
	if sel[0] != sel[1] || sel[0] != "a.txt sub/b.txt" {
		t.Errorf("selection: S3 volume %q, local %q", sel[0], sel[1])
	}
	// What local refuses, S3 refuses the same way.
	parity(t, s, http.StatusNotFound, "GET", "VOL/nope/?tar", nil, u)
	parity(t, s, http.StatusUnauthorized, "GET", "VOL/d/?tar", nil)
	parity(t, s, http.StatusBadRequest, "GET", "VOL/d/?tar=rar", nil, u)
	parity(t, s, http.StatusBadRequest, "POST", "VOL/d/?zip", []byte(`{"not":"a list"}`), u, "Content-Type: application/json")
	parity(t, s, http.StatusOK, "GET", "VOL/d/a.txt?tar", nil, u) // a file: the file
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Unpost on an S3 volume decides by the object's own metadata (uploader,
// address, time), as TestManageUnpost does on disk by the index: the
// uploader may, nobody else, never a folder, nor a file another S3
// client wrote.
func TestS3Unpost(t *testing.T) {
	m := startMinio(t, "vol")
	s := start(t, "-a", "ann:pw1", "-a", "bob:pw2", "-v", t.TempDir()+":s3:rw,ann,bob:c,s3=vol")
	ann, bob := basicAuth("ann:pw1"), basicAuth("bob:pw2")
	for _, n := range []string{"mine.txt", "mine2.txt"} {
		resp, body := s.do(t, "PUT", "/s3/up/"+n, []byte("mine"), ann)
		wantStatus(t, resp, body, http.StatusCreated)
	}
	m.Put(t, "vol", "up/foreign.txt", []byte("not uploaded through hoard"))
	resp, body := s.do(t, "POST", "/s3/up/mine.txt?delete", nil, ann)
	wantStatus(t, resp, body, http.StatusForbidden) // w is not d
	resp, body = s.do(t, "POST", "/?delete&unpost&lim=1", mgJSON(t, []string{"/s3/up/mine.txt"}), "Content-Type: text/plain;charset=UTF-8", bob)
	wantStatus(t, resp, body, http.StatusForbidden)
	if !strings.Contains(string(body), "not uploaded by (You)") {
		t.Errorf("bob's unpost: %s", body)
	}
	resp, body = s.do(t, "POST", "/?delete&unpost", mgJSON(t, []string{"/s3/up/foreign.txt"}), "Content-Type: text/plain;charset=UTF-8", ann)
	wantStatus(t, resp, body, http.StatusForbidden)
	resp, body = s.do(t, "POST", "/s3/up?delete&unpost", nil, ann)
	wantStatus(t, resp, body, http.StatusBadRequest)
	resp, body = s.do(t, "POST", "/?delete&unpost", mgJSON(t, []string{"/s3/up/mine.txt"}), "Content-Type: text/plain;charset=UTF-8")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("anonymous unpost: %d %s", resp.StatusCode, body)
	}
	if got := m.Keys(t, "vol"); !slices.Equal(got, []string{"up/foreign.txt", "up/mine.txt", "up/mine2.txt"}) {
		t.Fatalf("refused unposts changed the bucket: %q", got)
	}
	resp, body = s.do(t, "POST", "/?delete&unpost&lim=1", mgJSON(t, []string{"/s3/up/mine.txt"}), "Content-Type: text/plain;charset=UTF-8", ann)
	wantStatus(t, resp, body, http.StatusOK)
	resp, body = s.do(t, "POST", "/s3/up/mine2.txt?delete&unpost", nil, ann)
	wantStatus(t, resp, body, http.StatusOK)
	if got := m.Keys(t, "vol"); !slices.Equal(got, []string{"up/foreign.txt"}) {
		t.Errorf("after the uploader's unposts the bucket holds %q", got)
	}

	// With unpost off, nobody may.
	s2 := start(t, "-a", "ann:pw1", "--unpost", "0", "-v", t.TempDir()+":s3:rw,ann:c,s3=vol")
	resp, body = s2.do(t, "PUT", "/s3/late.txt", []byte("x"), ann)
	wantStatus(t, resp, body, http.StatusCreated)
	resp, body = s2.do(t, "POST", "/s3/late.txt?delete&unpost", nil, ann)
	wantStatus(t, resp, body, http.StatusForbidden)
	if !strings.Contains(string(body), "disabled") {
		t.Errorf("unpost with --unpost 0: %s", body)
	}
}

// Append (?apnd) on an S3 volume: the same statuses and bytes as on disk;
// a large object is extended server-side (its staged body gone after);
// appends at once never lose one that was acknowledged.
func TestS3Append(t *testing.T) {
	m := startMinio(t, "vol")
	u := basicAuth("u:pw")
	s := start(t, "-a", "u:pw", "-a", "w:wpw",
		"-v", t.TempDir()+":s3:r:rwmd,u:w,w:c,s3=vol",
		"-v", t.TempDir()+":loc:r:rwmd,u:w,w")
	parity(t, s, http.StatusCreated, "PUT", "VOL/log.txt", []byte("one,"), u)
	parity(t, s, 0, "PUT", "VOL/log.txt?apnd", []byte("two,"), u)
	parity(t, s, 0, "PUT", "VOL/new.txt?apnd", []byte("made"), u) // a missing file is made
	parity(t, s, 0, "PUT", "VOL/log.txt?apnd&gz", []byte("three"), u)
	parity(t, s, http.StatusBadRequest, "PUT", "VOL/log.txt?apnd&replace", []byte("x"), u)
	parity(t, s, http.StatusForbidden, "PUT", "VOL/log.txt?apnd", []byte("x"), basicAuth("w:wpw")) // needs d
	parity(t, s, http.StatusUnauthorized, "PUT", "VOL/log.txt?apnd", []byte("x"))
	parity(t, s, http.StatusCreated, "POST", "VOL/", []byte("act=mkdir&name=dir"), "Content-Type: application/x-www-form-urlencoded", u)
	parity(t, s, 0, "PUT", "VOL/dir?apnd", []byte("x"), u) // a folder
	for _, f := range []string{"/log.txt", "/new.txt"} {
		_, a := s.do(t, "GET", "/s3"+f, nil)
		_, b := s.do(t, "GET", "/loc"+f, nil)
		if !bytes.Equal(a, b) || !bytes.HasPrefix(a, []byte("one,two,")) && f == "/log.txt" {
			t.Errorf("%s: S3 volume %q, local %q", f, a, b)
		}
	}

	// Large: composed server-side; many at once, none lost.
	big := seededBytes(11, 6<<20)
	resp, body := s.do(t, "PUT", "/s3/big.bin", big, u)
	wantStatus(t, resp, body, http.StatusCreated)
	const n = 6
	done := make(chan int, n)
	for i := range n {
		go func() {
			r, b := s.do(t, "PUT", "/s3/big.bin?apnd", bytes.Repeat([]byte{byte('a' + i)}, 1000), u)
			switch r.StatusCode {
			case http.StatusCreated, http.StatusOK:
				done <- i
			case http.StatusConflict: // lost every race: refused, nothing appended
				done <- -1
			default:
				t.Errorf("append %d: %d %s", i, r.StatusCode, b)
				done <- -1
			}
		}()
	}
	var acked []int
	for range n {
		if i := <-done; i >= 0 {
			acked = append(acked, i)
		}
	}
	got, _ := m.Object(t, "vol", "big.bin")
	if len(acked) == 0 || len(got) != len(big)+len(acked)*1000 || !bytes.Equal(got[:len(big)], big) {
		t.Fatalf("after %d acknowledged appends: %d bytes, want %d", len(acked), len(got), len(big)+len(acked)*1000)
	}
	for _, i := range acked {
		if !bytes.Contains(got[len(big):], bytes.Repeat([]byte{byte('a' + i)}, 1000)) {
			t.Errorf("acknowledged append %d is missing", i)
		}
	}
	for _, k := range m.Keys(t, "vol") {
		if strings.Contains(k, ".hist") {
			t.Errorf("staged append body left: %s", k)
		}
	}
	// Small ones at once: each is there in full or refused (409), never lost.
	resp, body = s.do(t, "PUT", "/s3/small.txt", []byte{}, u)
	wantStatus(t, resp, body, http.StatusCreated)
	ok := 0
	var oks []int
	for i := range n {
		go func() {
			r, _ := s.do(t, "PUT", "/s3/small.txt?apnd", bytes.Repeat([]byte{byte('a' + i)}, 10), u)
			switch r.StatusCode {
			case http.StatusCreated, http.StatusOK:
				done <- i
			case http.StatusConflict:
				done <- -1
			default:
				t.Errorf("small append %d: %d", i, r.StatusCode)
				done <- -1
			}
		}()
	}
	for range n {
		if i := <-done; i >= 0 {
			ok++
			oks = append(oks, i)
		}
	}
	got, _ = m.Object(t, "vol", "small.txt")
	if len(got) != ok*10 || ok == 0 {
		t.Errorf("%d small appends acknowledged, object has %d bytes", ok, len(got))
	}
	for _, i := range oks {
		if !bytes.Contains(got, bytes.Repeat([]byte{byte('a' + i)}, 10)) {
			t.Errorf("acknowledged small append %d is missing", i)
		}
	}
	if inc := m.Incomplete(t, "vol"); len(inc) != 0 {
		t.Errorf("unfinished uploads left: %q", inc)
	}
}

// Shares of folders and files on an S3 volume reach exactly what they
// share (TestShareFolderEndToEnd, TestShareWriteFileAndPassword and
// TestShareSeveralFiles on disk): reads, listings, archives, uploads into
// a write share, and nothing beside.
func TestS3Shares(t *testing.T) {
	m := startMinio(t, "vol")
	s := start(t, "-a", "alice:apw", "-v", t.TempDir()+"::rwmd,alice:c,s3=vol/pre")
	for k, v := range map[string]string{"proj/a.txt": "file a", "proj/sub/deep.txt": "deep", "proj-secret/x.txt": "SECRET", "projx.txt": "SECRET2", "top.txt": "top file"} {
		m.Put(t, "vol", "pre/"+k, []byte(v))
	}
	makeShare(t, s, "apw", map[string]any{"k": "projkey", "vp": []string{"/proj/"}, "pw": "", "exp": "60", "perms": []string{"read"}}, 201)
	for p, want := range map[string]string{"/shr/projkey/a.txt": "file a", "/shr/projkey/sub/deep.txt": "deep"} {
		resp, body := s.do(t, "GET", p, nil)
		wantStatus(t, resp, body, 200)
		if string(body) != want {
			t.Errorf("%s: %q", p, body)
		}
	}
	resp, body := s.do(t, "GET", "/shr/projkey/?ls", nil)
	wantStatus(t, resp, body, 200)
	if !strings.Contains(string(body), `"sub/"`) || !strings.Contains(string(body), "a.txt") || strings.Contains(string(body), "secret") {
		t.Errorf("?ls: %s", body)
	}
	for _, target := range []string{
		"/shr/projkey/../proj-secret/x.txt", "/shr/projkey/%2e%2e/proj-secret/x.txt", "/shr/projkey/..%2fproj-secret/x.txt",
		"/shr/projkey/sub/../../projx.txt", "/shr/projkey/..%5cprojx.txt", "/shr/projkey-secret/x.txt", "/shr/projkeyx/",
		"/shr/projkey/.hist/x", "/shr/%2e%2e/top.txt", "/shr/projkey/?tree",
	} {
		resp, body := rawRequest(t, s, "GET", target, nil)
		if resp.StatusCode < 400 || strings.Contains(string(body), "SECRET") || strings.Contains(string(body), "top file") {
			t.Errorf("%s: %d %.200s", target, resp.StatusCode, body)
		}
	}
	for _, c := range []struct{ target, format string }{{"/shr/projkey/?tar", "tar"}, {"/shr/projkey/?zip", "zip"}, {"/shr/projkey/sub/?tar", "tar"}} {
		resp, body := s.do(t, "GET", c.target, nil)
		wantStatus(t, resp, body, 200)
		files := map[string]string{}
		for name, data := range readArchive(t, c.format, body) {
			if !strings.HasSuffix(name, "/") {
				_, rel, _ := strings.Cut(name, "/")
				files[rel] = string(data)
			}
		}
		want := map[string]string{"a.txt": "file a", "sub/deep.txt": "deep"}
		if strings.Contains(c.target, "/sub/") {
			want = map[string]string{"deep.txt": "deep"}
		}
		if !maps.Equal(files, want) {
			t.Errorf("%s: %v, want %v", c.target, files, want)
		}
	}

	// A write share takes uploads into the shared folder only.
	makeShare(t, s, "apw", map[string]any{"k": "drop", "vp": []string{"/proj/sub/"}, "exp": 0, "perms": []string{"read", "write"}}, 201)
	resp, body = s.do(t, "PUT", "/shr/drop/up.txt", []byte("uploaded"))
	wantStatus(t, resp, body, 201)
	if got, ok := m.Object(t, "vol", "pre/proj/sub/up.txt"); !ok || string(got) != "uploaded" {
		t.Errorf("upload through the share: %q %v", got, ok)
	}
	resp, body = s.do(t, "POST", "/shr/drop/up.txt?move=/top2.txt", nil)
	if resp.StatusCode < 400 {
		t.Errorf("a move inside a share: %d %s", resp.StatusCode, body)
	}

	// Shares of files reach those files only.
	makeShare(t, s, "apw", map[string]any{"k": "onefile", "vp": []string{"/top.txt"}, "perms": []string{"read"}}, 201)
	for _, p := range []string{"/shr/onefile/top.txt", "/shr/onefile"} {
		resp, body := s.do(t, "GET", p, nil)
		wantStatus(t, resp, body, 200)
		if string(body) != "top file" {
			t.Errorf("%s: %q", p, body)
		}
	}
	makeShare(t, s, "apw", map[string]any{"k": "multi", "vp": []string{"/top.txt", "/projx.txt"}, "exp": "5", "perms": []string{"read", "write"}}, 201)
	resp, body = s.do(t, "GET", "/shr/multi/?ls", nil)
	wantStatus(t, resp, body, 200)
	var ls struct {
		Dirs  []any `json:"dirs"`
		Files []any `json:"files"`
	}
	if err := json.Unmarshal(body, &ls); err != nil || len(ls.Files) != 2 || len(ls.Dirs) != 0 {
		t.Errorf("?ls of a share of files: %v %s", err, body)
	}
	for p, code := range map[string]int{"/shr/multi/top.txt": 200, "/shr/multi/projx.txt": 200, "/shr/multi/proj/a.txt": 404, "/shr/onefile/projx.txt": 404, "/shr/onefile/top.txt/x": 404, "/shr/multi/other.txt": 404} {
		resp, body := s.do(t, "GET", p, nil)
		if resp.StatusCode != code {
			t.Errorf("%s: %d %s", p, resp.StatusCode, body)
		}
	}
	resp, body = s.do(t, "PUT", "/shr/multi/new.txt", []byte("x"))
	if resp.StatusCode < 400 {
		t.Errorf("PUT into a share of files: %d %s", resp.StatusCode, body)
	}
	if _, ok := m.Object(t, "vol", "pre/new.txt"); ok {
		t.Error("a refused PUT into a share of files stored an object")
	}
}

// Lifetimes on an S3 volume: the volume's lifetime= and an upload's
// shorter ?life= end in the file's deletion by the bucket sweep; a
// moved file keeps its deadline, a copy has none, a file replaced
// meanwhile is not deleted for its predecessor's; refusals as on disk.
func TestS3Lifetimes(t *testing.T) {
	m := startMinio(t, "vol")
	u := basicAuth("u:pw")
	s := start(t, "-a", "u:pw",
		"-v", t.TempDir()+":s3:r:rwmd,u:c,s3=vol:c,lifetime=4",
		"-v", t.TempDir()+":s3n:r:rwmd,u:c,s3=vol/forever",
		"-v", t.TempDir()+":loc:r:rwmd,u:c,lifetime=4",
		"-v", t.TempDir()+":locn:r:rwmd,u")
	for _, v := range []string{"/s3", "/loc"} {
		for _, f := range []string{"/short.txt?life=1", "/vol.txt", "/moved.txt", "/copied.txt", "/replaced.txt?life=1"} {
			resp, body := s.do(t, "PUT", v+f, []byte("x"), u)
			wantStatus(t, resp, body, http.StatusCreated)
		}
	}
	// up2k: the upload's own life, and the volume's.
	for i, life := range []any{1, nil} {
		f := newUp2kFile(seededBytes(20+uint64(i), 3000))
		extra := map[string]any{}
		if life != nil {
			extra["life"] = life
		}
		rep := up2kHandshake(t, s, "/s3/", fmt.Sprintf("u%d.bin", i), f, 1, extra, u)
		for j := range f.hashes {
			postChunk(t, s, rep, f, j, u)
		}
	}
	for name, want := range map[string]time.Duration{"u0.bin": time.Second, "u1.bin": 4 * time.Second} {
		oi, err := m.Client.StatObject(context.Background(), "vol", name, minio.StatObjectOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		at, _ := time.Parse(time.RFC3339Nano, oi.UserMetadata["Hoard-At"])
		exp, _ := time.Parse(time.RFC3339Nano, oi.UserMetadata["Hoard-Expires"])
		if d := exp.Sub(at); d < want-time.Second || d > want+time.Second {
			t.Errorf("%s: expires %v after its upload, want %v", name, d, want)
		}
	}
	parity(t, s, 0, "PUT", "VOLn/f.txt?life=5", []byte("x"), u)   // no lifetime here
	parity(t, s, 0, "PUT", "VOL/neg.txt?life=-5", []byte("x"), u) // bad input
	parity(t, s, http.StatusCreated, "POST", "VOL/moved.txt?move=VOL/sub/moved.txt", nil, u)
	parity(t, s, http.StatusCreated, "POST", "VOL/copied.txt?copy=VOLn/copy.txt", nil, u)
	parity(t, s, http.StatusCreated, "PUT", "VOLn/new.txt", []byte("new"), u)
	parity(t, s, http.StatusCreated, "POST", "VOLn/new.txt?move=VOL/replaced.txt&replace", nil, u) // no lifetime of its own
	oi, err := m.Client.StatObject(context.Background(), "vol", "sub/moved.txt", minio.StatObjectOptions{})
	if err != nil || oi.UserMetadata["Hoard-Expires"] == "" {
		t.Errorf("moved object's metadata %v (%v): want its deadline", oi.UserMetadata, err)
	}
	gone := func(p string) bool {
		resp, _ := s.do(t, "GET", p, nil)
		return resp.StatusCode == http.StatusNotFound
	}
	deadline := time.Now().Add(40 * time.Second)
	for {
		all := true
		for _, p := range []string{"/s3/short.txt", "/s3/vol.txt", "/s3/sub/moved.txt", "/s3/u0.bin", "/s3/u1.bin", "/loc/short.txt", "/loc/vol.txt", "/loc/sub/moved.txt"} {
			all = all && gone(p)
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("files past their lifetime are still served")
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, p := range []string{"VOLn/copy.txt", "VOL/replaced.txt"} {
		parity(t, s, http.StatusOK, "GET", p, nil)
	}
	var keys []string
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		keys = m.Keys(t, "vol")
		left := slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, ".hist/life/") })
		if !left {
			break
		}
		if time.Now().After(end) {
			t.Errorf("expiry records outlived their deadlines: %q", keys)
			break
		}
	}
	if slices.Contains(keys, "short.txt") || slices.Contains(keys, "vol.txt") || slices.Contains(keys, "sub/moved.txt") {
		t.Errorf("expired objects left: %q", keys)
	}
}

// Move and copy between an S3 volume and a volume on disk stream the
// bytes both ways, whole files and trees (empty folders too), with the
// statuses of a move between two volumes on disk; a move leaves its
// source only once the destination is whole, and keeps what has no
// object form (a link).
func TestS3MoveCopyMixed(t *testing.T) {
	m := startMinio(t, "vol")
	u := basicAuth("u:pw")
	loc := t.TempDir()
	s := start(t, "-a", "u:pw",
		"-v", t.TempDir()+":s3:r:rwmd,u:c,s3=vol",
		"-v", loc+":loc:r:rwmd,u")
	put := func(p, data string) {
		t.Helper()
		resp, body := s.do(t, "PUT", p, []byte(data), u)
		wantStatus(t, resp, body, http.StatusCreated)
	}
	mkdir := func(p, name string) {
		t.Helper()
		resp, body := s.do(t, "POST", p, []byte("act=mkdir&name="+name), "Content-Type: application/x-www-form-urlencoded", u)
		wantStatus(t, resp, body, http.StatusCreated)
	}
	get := func(p string) (int, string) {
		t.Helper()
		resp, body := s.do(t, "GET", p, nil)
		return resp.StatusCode, string(body)
	}
	do := func(want int, p string) {
		t.Helper()
		resp, body := s.do(t, "POST", p, nil, u)
		wantStatus(t, resp, body, want)
	}
	big := string(seededBytes(12, 20<<20+3)) // more than a part
	put("/s3/t/a.txt", "a")
	put("/s3/t/sub/b.bin", big)
	mkdir("/s3/t/", "empty")
	put("/loc/l/c.txt", "c")
	put("/loc/l/sub/d.bin", big)
	mkdir("/loc/l/", "empty")
	put("/loc/target.txt", "target")
	if err := os.Symlink("../target.txt", filepath.Join(loc, "l", "link.txt")); err != nil {
		t.Fatal(err)
	}

	// Object store → disk.
	do(http.StatusCreated, "/s3/t?copy=/loc/tc")
	if c, b := get("/loc/tc/sub/b.bin"); c != 200 || b != big {
		t.Errorf("copied tree: %d, %d bytes", c, len(b))
	}
	if c, _ := get("/loc/tc/empty/?ls"); c != 200 {
		t.Errorf("copied tree lacks its empty folder: %d", c)
	}
	do(http.StatusConflict, "/s3/t?copy=/loc/tc") // taken
	do(http.StatusCreated, "/s3/t?move=/loc/tm")
	if c, b := get("/loc/tm/a.txt"); c != 200 || b != "a" {
		t.Errorf("moved tree: %d %q", c, b)
	}
	if c, _ := get("/s3/t/?ls"); c != 404 {
		t.Errorf("the moved folder is still in the bucket: %d", c)
	}
	put("/s3/f.txt", "f")
	put("/loc/f.txt", "old")
	do(http.StatusConflict, "/s3/f.txt?move=/loc/f.txt")
	do(http.StatusCreated, "/s3/f.txt?move=/loc/f.txt&replace")
	if c, b := get("/loc/f.txt"); c != 200 || b != "f" {
		t.Errorf("moved file over an old one: %d %q", c, b)
	}
	do(http.StatusNotFound, "/s3/nope.txt?move=/loc/nope.txt")

	// Disk → object store.
	do(http.StatusCreated, "/loc/l?copy=/s3/lc")
	for k, v := range map[string]string{"lc/c.txt": "c", "lc/sub/d.bin": big, "lc/link.txt": "target", "lc/empty/": ""} {
		if got, ok := m.Object(t, "vol", k); !ok || string(got) != v {
			t.Errorf("object %s: %v, %d bytes", k, ok, len(got))
		}
	}
	do(http.StatusConflict, "/loc/l?move=/s3/lm") // the link stays
	if !pathExists(loc, "l/link.txt") || pathExists(loc, "l/c.txt") || pathExists(loc, "l/sub/d.bin") {
		t.Error("a move to object storage took the link, or left files it copied")
	}
	if got, ok := m.Object(t, "vol", "lm/sub/d.bin"); !ok || string(got) != big {
		t.Errorf("moved big file: %v, %d bytes", ok, len(got))
	}
	put("/loc/g.txt", "g")
	do(http.StatusCreated, "/loc/g.txt?move=/s3/g.txt")
	if pathExists(loc, "g.txt") {
		t.Error("the moved file is still on disk")
	}
	do(http.StatusBadRequest, "/loc/l/link.txt?move=/s3/link.txt")
	do(http.StatusConflict, "/loc/target.txt?copy=/s3/g.txt")
	if inc := m.Incomplete(t, "vol"); len(inc) != 0 {
		t.Errorf("unfinished uploads left: %q", inc)
	}
	ents, _ := os.ReadDir(loc)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".hoardop-") {
			t.Errorf("work file left: %s", e.Name())
		}
	}
}

// A volume on a nested prefix of the same bucket (s3=vol/pre/sub inside
// s3=vol/pre) is another volume's folder inside a folder, as on disk: a
// user who may delete or move in the outer volume cannot delete, move or
// replace the folder that holds it, which would take the inner volume's
// files with it. The answers are those of the same volumes on disk.
func TestS3NestedPrefixVolumeKept(t *testing.T) {
	m := startMinio(t, "vol")
	u := basicAuth("u:pw")
	loc := t.TempDir()
	if err := os.MkdirAll(filepath.Join(loc, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(loc, "sub", "inner.txt"), []byte("the inner volume's"), 0o644); err != nil {
		t.Fatal(err)
	}
	// /in and /lin are readable by everyone, and nobody may change them;
	// u may do anything in /s3 and /loc.
	s := start(t, "-a", "u:pw",
		"-v", t.TempDir()+":s3:r:rwmd,u:c,s3=vol/pre",
		"-v", t.TempDir()+":in:r:c,s3=vol/pre/sub",
		"-v", loc+":loc:r:rwmd,u",
		"-v", filepath.Join(loc, "sub")+":lin:r")
	m.Put(t, "vol", "pre/sub/inner.txt", []byte("the inner volume's"))
	parity(t, s, http.StatusCreated, "PUT", "VOL/other/o.txt", []byte("other"), u)

	parity(t, s, http.StatusConflict, "POST", "VOL/sub/?delete", nil, u)
	parity(t, s, http.StatusConflict, "POST", "VOL/sub?move=VOL/moved", nil, u)
	parity(t, s, http.StatusConflict, "POST", "VOL/other?move=VOL/sub&replace", nil, u)
	parity(t, s, http.StatusConflict, "POST", "VOL/other?copy=VOL/sub&replace", nil, u)
	parity(t, s, http.StatusConflict, "POST", "VOL/other/o.txt?copy=VOL/sub&replace", nil, u)
	// What lies beside the inner volume stays the outer one's.
	parity(t, s, http.StatusCreated, "POST", "VOL/other?copy=VOL/other2", nil, u)
	parity(t, s, http.StatusOK, "POST", "VOL/other2/?delete", nil, u)

	for _, p := range []string{"/in/inner.txt", "/lin/inner.txt", "/s3/sub/inner.txt", "/loc/sub/inner.txt"} {
		resp, body := s.do(t, "GET", p, nil)
		if resp.StatusCode != http.StatusOK || string(body) != "the inner volume's" {
			t.Errorf("GET %s: %d %q; the inner volume's file is not intact", p, resp.StatusCode, body)
		}
	}
	if keys := m.Keys(t, "vol"); !slices.Equal(keys, []string{"pre/other/o.txt", "pre/sub/inner.txt"}) {
		t.Errorf("bucket keys %q", keys)
	}
}
