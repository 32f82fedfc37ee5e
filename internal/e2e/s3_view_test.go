package e2e

// ?txt, ?tail, ?v and zip members of objects (docs/s3.md, http/remote_view.go):
// read by ranged GETs, with the statuses of a file on disk.

import (
	"bytes"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"golang.org/x/text/encoding/charmap"
)

func TestS3FileViews(t *testing.T) {
	m := startMinio(t, "vol")
	auth := basicAuth("u:pw")
	s := start(t, "-a", "u:pw", "-v", t.TempDir()+":s3:rw,u:c,s3=vol/pre")

	// Zip members: listed, and fetched decompressed.
	mt := time.Date(2024, 5, 6, 7, 8, 10, 0, time.UTC)
	big := strings.Repeat("0123456789abcdef", 50000)
	members := [][2]string{{"docs/", ""}, {"docs/readme.txt", "hello zip\n"}, {"big.bin", big}, {"ünï/日本.txt", "非ASCII ✓\n"}}
	m.Put(t, "vol", "pre/z/a.zip", makeZip(t, members, mt))
	rows := zlsGet(t, s, "/s3/z/a.zip", auth)
	if len(rows) != len(members) {
		t.Fatalf("?zls of an object: %+v", rows)
	}
	for i, mb := range members {
		if rows[i].Fn != mb[0] || rows[i].Sz != uint64(len(mb[1])) || rows[i].Ts != mt.Unix() {
			t.Errorf("row %d = %+v, want %q", i, rows[i], mb[0])
		}
	}
	for _, mb := range members[1:] {
		resp, body := s.do(t, "GET", "/s3/z/a.zip?zget="+url.QueryEscape(mb[0]), nil, auth)
		wantStatus(t, resp, body, 200)
		if string(body) != mb[1] || resp.Header.Get("Content-Length") != strconv.Itoa(len(mb[1])) {
			t.Errorf("?zget=%s: %d bytes", mb[0], len(body))
		}
	}
	resp, body := s.do(t, "GET", "/s3/z/a.zip?zget=nope", nil, auth)
	wantStatus(t, resp, body, http.StatusNotFound)
	m.Put(t, "vol", "pre/z/not.zip", []byte("not a zip at all"))
	resp, body = s.do(t, "GET", "/s3/z/not.zip?zls", nil, auth)
	if resp.StatusCode < 400 || resp.StatusCode >= 500 {
		t.Errorf("?zls of a non-zip: %d %s", resp.StatusCode, body)
	}

	// ?txt: UTF-8 transcoded into the asked encoding; another encoding
	// labelled only; a bad label 400.
	text := "Grüße, café — naïve\n"
	m.Put(t, "vol", "pre/t/u.txt", []byte(text))
	resp, body = s.do(t, "GET", "/s3/t/u.txt?txt=iso-8859-15", nil, auth)
	wantStatus(t, resp, body, 200)
	want, _ := charmap.ISO8859_15.NewEncoder().String(strings.ReplaceAll(text, "—", "?"))
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain; charset=iso-8859-15" || string(body) != want && !bytes.Contains(body, []byte("Gr\xfc\xdfe")) {
		t.Errorf("?txt=iso-8859-15: %s %q", ct, body)
	}
	latin := []byte("caf\xe9\n")
	m.Put(t, "vol", "pre/t/l.txt", latin)
	resp, body = s.do(t, "GET", "/s3/t/l.txt?txt=latin1", nil, auth)
	wantStatus(t, resp, body, 200)
	if !bytes.Equal(body, latin) || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; charset=") {
		t.Errorf("?txt of a latin-1 object: %s %q", resp.Header.Get("Content-Type"), body)
	}
	resp, body = s.do(t, "GET", "/s3/t/u.txt?txt", nil, auth, "Range: bytes=0-3")
	wantStatus(t, resp, body, http.StatusPartialContent)
	if string(body) != "Grü" {
		t.Errorf("?txt with a range: %q", body)
	}
	resp, body = s.do(t, "GET", "/s3/t/u.txt?txt=no-such-thing", nil, auth)
	wantStatus(t, resp, body, http.StatusBadRequest)

	// ?v: Markdown rendered safely, a media page, anything else itself.
	m.Put(t, "vol", "pre/v/r.md", []byte("# Hello *there*\n\n<script>alert(1)</script>\n"))
	resp, body = s.do(t, "GET", "/s3/v/r.md?v", nil, auth)
	wantStatus(t, resp, body, 200)
	if !bytes.Contains(body, []byte("<h1>Hello <em>there</em></h1>")) || bytes.Contains(body, []byte("<script>alert")) {
		t.Errorf("?v of a Markdown object: %s", body)
	}
	m.Put(t, "vol", "pre/v/song.mp3", []byte("ID3"))
	resp, body = s.do(t, "GET", "/s3/v/song.mp3?v", nil, auth)
	wantStatus(t, resp, body, 200)
	if !bytes.Contains(body, []byte("<audio")) {
		t.Errorf("?v of an mp3 object: %s", body)
	}
	resp, body = s.do(t, "GET", "/s3/t/u.txt?v", nil, auth)
	wantStatus(t, resp, body, 200)
	if string(body) != text {
		t.Errorf("?v of a text object: %q", body)
	}

	// Bad input and permissions as on disk.
	resp, body = s.do(t, "GET", "/s3/t/u.txt?tail=99999", nil, auth)
	wantStatus(t, resp, body, http.StatusRequestedRangeNotSatisfiable)
	resp, body = s.do(t, "GET", "/s3/t/u.txt?tail=abc", nil, auth)
	wantStatus(t, resp, body, http.StatusBadRequest)
	for _, q := range []string{"?txt", "?tail", "?v", "?zls"} {
		resp, body = s.do(t, "GET", "/s3/t/u.txt"+q, nil)
		wantStatus(t, resp, body, http.StatusUnauthorized)
		resp, body = s.do(t, "GET", "/s3/t/missing.txt"+q, nil, auth)
		wantStatus(t, resp, body, http.StatusNotFound)
	}
}

// ?tail of an object: sent to its end, then followed as new versions
// that keep the old bytes (an append) replace it; a version with other
// bytes ends the stream, as a replaced file on disk does.
func TestS3Tail(t *testing.T) {
	m := startMinio(t, "vol")
	s := start(t, "-v", t.TempDir()+":s3:r:c,s3=vol/pre")
	log := []byte(strings.Repeat("first line\n", 100))
	m.Put(t, "vol", "pre/app.log", log)
	tr := startTail(t, s, "/s3/app.log?tail=-110")
	tr.waitLen(t, 110, 5*time.Second)
	for i := range 3 {
		log = append(log, []byte("appended "+strconv.Itoa(i)+"\n")...)
		m.Put(t, "vol", "pre/app.log", log)
		tr.waitLen(t, 110+(i+1)*11, 10*time.Second)
	}
	if got := tr.bytes(); !bytes.Equal(got, log[len(log)-110-33:]) {
		t.Fatalf("tail sent %q", got)
	}
	other := append(bytes.Repeat([]byte("X"), len(log)), "more\n"...)
	m.Put(t, "vol", "pre/app.log", other)
	tr.waitEnd(t, 10*time.Second)
	if got := tr.bytes(); !bytes.Equal(got, log[len(log)-110-33:]) {
		t.Fatalf("after a replacement with other bytes the tail sent %q", got[len(got)-20:])
	}
	// A delete ends it too.
	tr = startTail(t, s, "/s3/app.log?tail")
	tr.waitLen(t, len(other), 5*time.Second)
	if err := m.Client.RemoveObject(t.Context(), "vol", "pre/app.log", minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	tr.waitEnd(t, 10*time.Second)
}
