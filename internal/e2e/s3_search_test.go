package e2e

// Search on volumes on object storage (docs/s3.md, "Index and search"):
// each node's index is a cache of the bucket, built by a listing, kept
// current by the node's own writes and by rescans (--re-maxage).

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"hoard/internal/miniotest"
	"hoard/up2k"
)

// Two nodes on one bucket with e2dsa and a 1-second rescan: what one
// node stores (PUT, up2k) is found through the other by name, size, hash
// and uploader; another S3 client's objects are indexed (hashed by
// reading them); keys deleted or replaced behind hoard's back leave or
// change the index after a rescan.
func TestS3SearchTwoNodes(t *testing.T) {
	m := startMinio(t, "vol")
	auth := basicAuth("u:pw")
	// Before hoard starts: another client's object, found by the first scan.
	foreign := seededBytes(5, 70_000)
	m.Put(t, "vol", "pre/outside/foreign.dat", foreign)
	m.Put(t, "vol", "pre/.dotted/hidden.dat", []byte("x")) // dot paths are not indexed, as on disk
	args := func() []string {
		return []string{"-a", "u:pw", "--re-maxage", "1", "-v", t.TempDir() + ":s3:r:rwmda,u:c,s3=vol/pre:c,e2dsa"}
	}
	a, b := start(t, args()...), start(t, args()...)
	waitReady(t, a)
	waitReady(t, b)
	for _, s := range []*server{a, b} {
		waitHits(t, s, "foreign", []string{"/s3/outside/foreign.dat"})
		waitHits(t, s, "hidden", nil)
		ff := newUp2kFile(foreign)
		code, r := postSearch(t, s, map[string]any{"srch": true, "hash": ff.hashes})
		if code != 200 || !slices.Equal(r.hrefs(), []string{"/s3/outside/foreign.dat"}) {
			t.Errorf("%s: hash search of another client's object: %d %q %q", s.URL, code, r.Error, r.hrefs())
		}
	}

	// A PUT through A: A's index has it at once (its own write), B's
	// after a rescan.
	resp, body := a.do(t, "PUT", "/s3/docs/Quarterly%20Report.txt", seededBytes(6, 2_000_000), auth)
	wantStatus(t, resp, body, http.StatusCreated)
	waitHits(t, a, "quarterly", []string{"/s3/docs/Quarterly%20Report.txt"})
	waitHits(t, b, "quarterly", []string{"/s3/docs/Quarterly%20Report.txt"})
	waitHits(t, b, "size:>1M", []string{"/s3/docs/Quarterly%20Report.txt"})

	// up2k through A: B finds it by chunk hash (the list stored beside
	// it) and by wark, and lists it among the uploads with its uploader.
	f := newUp2kFile(seededBytes(7, 3<<20+5))
	rep := up2kHandshake(t, a, "/s3/up/", "movie.bin", f, 1600000000, nil, auth)
	for i := range rep.Need {
		postChunk(t, a, rep, f, i, auth)
	}
	if _, ok := m.Object(t, "vol", "pre/.hist/hashes/"+rep.Wark); !ok {
		t.Error("no chunk-hash list beside the up2k upload")
	}
	waitHits(t, b, "movie", []string{"/s3/up/movie.bin"})
	for _, c := range []struct {
		name   string
		hashes []string
	}{{"second chunk", f.hashes[1:2]}, {"wark", []string{rep.Wark}}} {
		code, r := postSearch(t, b, map[string]any{"srch": true, "hash": c.hashes})
		if code != 200 || !slices.Equal(r.hrefs(), []string{"/s3/up/movie.bin"}) {
			t.Errorf("B, hash search by %s: %d %q %q", c.name, code, r.Error, r.hrefs())
		}
	}
	resp, body = b.do(t, "GET", "/?ru&j", nil, auth)
	wantStatus(t, resp, body, 200)
	var ru ruBody
	if err := json.Unmarshal(body, &ru); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, u := range ru.Ups {
		if u.Vp == "/s3/up/movie.bin" {
			found = u.Un == "u" && u.IP == "127.0.0.1" && u.At > 0 && u.Sz == int64(len(f.data))
			if !found {
				t.Errorf("B's ?ru row of A's upload: %+v", u)
			}
		}
	}
	if !found {
		t.Errorf("B's ?ru does not list A's upload: %s", body)
	}

	// Behind hoard's back: a delete and a replace with other bytes.
	if err := m.Client.RemoveObject(context.Background(), "vol", "pre/docs/Quarterly Report.txt", minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	other := seededBytes(8, 500)
	m.Put(t, "vol", "pre/outside/foreign.dat", other)
	for _, s := range []*server{a, b} {
		waitHits(t, s, "quarterly", nil)
		waitHits(t, s, "size:>60k foreign", nil)
		waitHits(t, s, "size:<1k foreign", []string{"/s3/outside/foreign.dat"})
		code, r := postSearch(t, s, map[string]any{"srch": true, "hash": newUp2kFile(other).hashes})
		if code != 200 || !slices.Equal(r.hrefs(), []string{"/s3/outside/foreign.dat"}) {
			t.Errorf("%s: hash search of the replaced object: %d %q %q", s.URL, code, r.Error, r.hrefs())
		}
	}

	// A delete through B: B forgets it at once, A after a rescan.
	resp, body = b.do(t, "POST", "/s3/up/movie.bin?delete", nil, auth)
	if resp.StatusCode != 200 {
		t.Fatalf("delete through B: %d %s", resp.StatusCode, body)
	}
	waitHits(t, b, "movie", nil)
	waitHits(t, a, "movie", nil)
	if strings.Contains(strings.Join(m.Keys(t, "vol"), "\n"), ".hist/idx") {
		t.Error("the index went into the bucket")
	}
}

// One node without rescans: its own writes keep its index current (PUT,
// up2k, delete of a file and of a folder), and a restart's first scan
// reads the upload records back from the objects' metadata.
func TestS3SearchOwnWrites(t *testing.T) {
	startMinio(t, "vol")
	auth := basicAuth("u:pw")
	state := t.TempDir()
	args := []string{"-a", "u:pw", "-v", state + ":s3:r:rwmda,u:c,s3=vol/pre:c,e2dsa"}
	s := start(t, args...)
	waitReady(t, s)
	resp, body := s.do(t, "PUT", "/s3/a/one.txt", []byte("hello"), auth)
	wantStatus(t, resp, body, http.StatusCreated)
	waitHits(t, s, "one", []string{"/s3/a/one.txt"})
	f := newUp2kFile(seededBytes(9, 1<<20+77))
	rep := up2kHandshake(t, s, "/s3/a/", "two.bin", f, 1600000000, nil, auth)
	for i := range rep.Need {
		postChunk(t, s, rep, f, i, auth)
	}
	waitHits(t, s, "two", []string{"/s3/a/two.bin"})
	if code, r := postSearch(t, s, map[string]any{"srch": true, "hash": f.hashes[1:]}); code != 200 || !slices.Equal(r.hrefs(), []string{"/s3/a/two.bin"}) {
		t.Errorf("hash search: %d %q %q", code, r.Error, r.hrefs())
	}
	resp, body = s.do(t, "POST", "/s3/a/one.txt?delete", nil, auth)
	wantStatus(t, resp, body, 200)
	waitHits(t, s, "one", nil)

	// A restart with a fresh state folder: the first scan finds the
	// file with its uploader and address (object metadata).
	s.kill(t)
	args[3] = t.TempDir() + ":s3:r:rwmda,u:c,s3=vol/pre:c,e2dsa"
	s = start(t, args...)
	waitReady(t, s)
	waitHits(t, s, "two", []string{"/s3/a/two.bin"})
	resp, body = s.do(t, "GET", "/?ru&j", nil, auth)
	wantStatus(t, resp, body, 200)
	var ru ruBody
	if err := json.Unmarshal(body, &ru); err != nil {
		t.Fatal(err)
	}
	if len(ru.Ups) != 1 || ru.Ups[0].Vp != "/s3/a/two.bin" || ru.Ups[0].Un != "u" || ru.Ups[0].IP != "127.0.0.1" {
		t.Errorf("?ru after a rescan from the bucket: %s", body)
	}
	if code, r := postSearch(t, s, map[string]any{"srch": true, "hash": f.hashes[:1]}); code != 200 || !slices.Equal(r.hrefs(), []string{"/s3/a/two.bin"}) {
		t.Errorf("hash search after the restart: %d %q %q", code, r.Error, r.hrefs())
	}

	// A folder delete: everything below it leaves the index.
	resp, body = s.do(t, "POST", "/s3/a?delete", nil, auth)
	wantStatus(t, resp, body, 200)
	waitHits(t, s, "two", nil)
}

// A chunk-hash list beside an object is used when it gives the wark the
// object's metadata names (no read of the object), and ignored when it
// does not (the object is read and hashed). The bucket is trusted as the
// file system is: a list that agrees with the metadata is not checked
// against the bytes.
func TestS3SearchHashLists(t *testing.T) {
	m := startMinio(t, "vol")
	a, b, c := seededBytes(11, 1<<20+100), seededBytes(12, 1<<20+100), seededBytes(13, 1<<20+100)
	fa, fb, fc := newUp2kFile(a), newUp2kFile(b), newUp2kFile(c)
	wa, wc := up2k.Wark("hunter2", int64(len(a)), fa.hashes), up2k.Wark("hunter2", int64(len(c)), fc.hashes)
	put := func(key string, data []byte, wark string) {
		t.Helper()
		_, err := m.Client.PutObject(context.Background(), "vol", key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{UserMetadata: map[string]string{"hoard-wark": wark}})
		if err != nil {
			t.Fatal(err)
		}
	}
	list := func(hs []string) []byte { return []byte(strings.Join(hs, "\n") + "\n") }
	// listed.bin holds b's bytes but names a's wark, with a's list: the
	// list is taken (so a's hashes find it).
	put("pre/listed.bin", b, wa)
	m.Put(t, "vol", "pre/.hist/hashes/"+wa, list(fa.hashes))
	// mismatch.bin names c's wark, but its list is b's: not taken, the
	// object is hashed (its own bytes, c's, find it).
	put("pre/mismatch.bin", c, wc)
	m.Put(t, "vol", "pre/.hist/hashes/"+wc, list(fb.hashes))
	s := start(t, "-v", t.TempDir()+":s3:r:c,s3=vol/pre:c,e2dsa")
	waitReady(t, s)
	for _, tc := range []struct {
		name   string
		hashes []string
		want   []string
	}{
		{"the list's hashes", fa.hashes[1:], []string{"/s3/listed.bin"}},
		{"a mismatched list's hashes", fb.hashes[1:], nil},
		{"the bytes of an object whose list did not agree", fc.hashes[1:], []string{"/s3/mismatch.bin"}},
	} {
		code, r := postSearch(t, s, map[string]any{"srch": true, "hash": tc.hashes})
		if code != 200 || !slices.Equal(r.hrefs(), tc.want) {
			t.Errorf("%s: %d %q %q, want %q", tc.name, code, r.Error, r.hrefs(), tc.want)
		}
	}
}

// A store that is down never empties the index: rescans that cannot
// list keep what the index had; a first scan that could not list is
// tried again (without --re-maxage too) once the store is back.
func TestS3SearchStoreDown(t *testing.T) {
	m := startMinio(t, "vol")
	m.Put(t, "vol", "pre/kept.txt", []byte("x"))
	a := start(t, "--re-maxage", "1", "-v", t.TempDir()+":s3:r:c,s3=vol/pre:c,e2dsa")
	waitReady(t, a)
	waitHits(t, a, "kept", []string{"/s3/kept.txt"})
	m.Halt()
	time.Sleep(3 * time.Second) // rescans fail meanwhile
	if code, r := postSearch(t, a, map[string]any{"q": "kept"}); code != 200 || !slices.Equal(r.hrefs(), []string{"/s3/kept.txt"}) {
		t.Errorf("with the store down: %d %q %q, want the index as it was", code, r.Error, r.hrefs())
	}
	// Started while the store is down, no rescans: searches answer (with
	// nothing yet), and the file is found once the store is back.
	b := start(t, "-v", t.TempDir()+":s3:r:c,s3=vol/pre:c,e2dsa")
	waitReady(t, b)
	m.Run(t)
	for _, s := range []*server{a, b} {
		deadline := time.Now().Add(60 * time.Second)
		for {
			code, r := postSearch(t, s, map[string]any{"q": "kept"})
			if code == 200 && slices.Equal(r.hrefs(), []string{"/s3/kept.txt"}) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s after the store came back: %d %q %q", s.URL, code, r.Error, r.hrefs())
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
}

// Tags (e2ts) on an S3 volume served by two nodes: a song PUT through A
// is found by its tags through A at once and through B after a rescan;
// an object larger than the probe's two ends (ffprobe reads a sparse
// stand-in, never the whole object) gets its tags and its duration (an
// Ogg's from its last page, at the end) right.
func TestS3SearchTagsTwoNodes(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg is not installed")
	}
	if _, err := exec.LookPath("ffprobe"); err != nil {
		t.Skip("ffprobe is not installed")
	}
	t.Parallel()
	dir := t.TempDir()
	mk := func(name, artist string, secs int, kbps string) []byte {
		t.Helper()
		out := filepath.Join(dir, name)
		cmd := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "anoisesrc=sample_rate=44100:duration="+strconv.Itoa(secs),
			"-b:a", kbps, "-metadata", "artist="+artist, "-metadata", "title=Static", out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ffmpeg: %v: %s", err, b)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	small := mk("small.mp3", "Tiny Band", 2, "128k")
	big := mk("big.ogg", "Huge Band", 420, "192k")
	if len(big) <= 9<<20 {
		t.Fatalf("big.ogg has %d bytes; the test needs more than the probe's two 4 MiB ends", len(big))
	}
	m := miniotest.Start(t, "vol")
	setHoardEnv(t, m.Endpoint())
	args := func() []string {
		return []string{"-a", "u:pw", "--re-maxage", "1", "-v", t.TempDir() + ":s3:r:rw,u:c,s3=vol/pre:c,e2dsa,e2ts"}
	}
	a, b := start(t, args()...), start(t, args()...)
	u := basicAuth("u:pw")
	for name, data := range map[string][]byte{"small.mp3": small, "big.ogg": big} {
		resp, body := a.do(t, "PUT", "/s3/music/"+name, data, u)
		wantStatus(t, resp, body, http.StatusCreated)
	}
	for _, s := range []*server{a, b} {
		waitHits(t, s, "artist:tiny", []string{"/s3/music/small.mp3"})
		waitHits(t, s, `artist:"huge band" title:static`, []string{"/s3/music/big.ogg"})
		waitHits(t, s, "dur:>410 dur:<430", []string{"/s3/music/big.ogg"})
		waitHits(t, s, "dur:<5", []string{"/s3/music/small.mp3"})
	}
}
