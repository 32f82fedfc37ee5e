package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"hoard/internal/miniotest"
	"hoard/store"
)

func open(t *testing.T) (*Bucket, *miniotest.Server) {
	t.Helper()
	m := miniotest.Start(t, "bk1")
	b, err := Open(context.Background(), Config{Endpoint: m.Endpoint(), AccessKey: miniotest.User, SecretKey: miniotest.Pass, Region: "us-east-1"}, "bk1")
	if err != nil {
		t.Fatal(err)
	}
	return b, m
}

// The ObjectStore contract store relies on, against a real MinIO.
func TestBucketContract(t *testing.T) {
	b, m := open(t)
	ctx := context.Background()

	if _, err := b.Stat(ctx, "none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Stat of a missing key: %v, want ErrNotFound", err)
	}
	data := bytes.Repeat([]byte("0123456789"), 1000)
	oi, err := b.Put(ctx, "d/k", bytes.NewReader(data), store.ObjectPut{NoClobber: true, Meta: map[string]string{"hoard-uploader": "ed"}})
	if err != nil {
		t.Fatal(err)
	}
	if oi.Size != int64(len(data)) || oi.ETag == "" || oi.ModTime.IsZero() || oi.Meta["hoard-uploader"] != "ed" {
		t.Errorf("Put gave %+v", oi)
	}
	// No clobber: a taken key is ErrExists, and the object stays.
	_, err = b.Put(ctx, "d/k", strings.NewReader("other"), store.ObjectPut{NoClobber: true})
	if !errors.Is(err, store.ErrExists) {
		t.Errorf("NoClobber put on a taken key: %v, want ErrExists", err)
	}
	if got, _ := m.Object(t, "bk1", "d/k"); !bytes.Equal(got, data) {
		t.Error("a refused NoClobber put changed the object")
	}
	if inc := m.Incomplete(t, "bk1"); len(inc) != 0 {
		t.Errorf("a refused put left multipart uploads: %q", inc)
	}
	// A failing body aborts: nothing visible, nothing incomplete.
	_, err = b.Put(ctx, "d/broken", io.MultiReader(strings.NewReader("abc"), errReader{}), store.ObjectPut{})
	if err == nil {
		t.Error("a put whose body failed succeeded")
	}
	if _, ok := m.Object(t, "bk1", "d/broken"); ok {
		t.Error("a failed put left an object")
	}
	if inc := m.Incomplete(t, "bk1"); len(inc) != 0 {
		t.Errorf("a failed put left multipart uploads: %q", inc)
	}

	// The reader: seeks anywhere, reads to the end, is pinned to its version.
	r, err := b.Open(ctx, oi)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := r.Seek(0, io.SeekEnd); n != int64(len(data)) {
		t.Errorf("Seek to the end: %d", n)
	}
	r.Seek(9995, io.SeekStart)
	got, err := io.ReadAll(r)
	if err != nil || string(got) != "56789" {
		t.Errorf("read from 9995: %q, %v", got, err)
	}
	r.Seek(10, io.SeekStart)
	buf := make([]byte, 5)
	if _, err := io.ReadFull(r, buf); err != nil || string(buf) != "01234" {
		t.Errorf("read at 10: %q, %v", buf, err)
	}
	r.Close()
	m.Put(t, "bk1", "d/k", []byte("replaced"))
	r, _ = b.Open(ctx, oi)
	if _, err := io.ReadAll(r); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("reading a replaced object by its old ETag: %v, want an error", err)
	}
	r.Close()

	// A folder marker.
	if _, err := b.Put(ctx, "d/made here/", strings.NewReader("ignored"), store.ObjectPut{NoClobber: true}); err != nil {
		t.Fatalf("folder marker: %v", err)
	}
	if got, ok := m.Object(t, "bk1", "d/made here/"); !ok || len(got) != 0 {
		t.Errorf("folder marker: %q, %v", got, ok)
	}

	// List: one level, common prefixes as folders.
	m.Put(t, "bk1", "d/sub/x", []byte("x"))
	var keys []string
	if err := b.List(ctx, "d/", func(oi store.ObjectInfo) error {
		keys = append(keys, oi.Key+map[bool]string{true: "(dir)"}[oi.Dir])
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(keys, " ") != "d/k d/made here/(dir) d/sub/(dir)" {
		t.Errorf("List d/: %q", keys)
	}
	keys = nil
	if err := b.Walk(ctx, "d/", func(oi store.ObjectInfo) error { keys = append(keys, oi.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(keys, " ") != "d/k d/made here/ d/sub/x" {
		t.Errorf("Walk d/: %q", keys)
	}
	if err := b.Delete(ctx, "d/k"); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "d/k"); err != nil {
		t.Errorf("deleting a missing key: %v", err)
	}

	// Down: every call is ErrObjectStoreDown (503).
	m.Halt()
	if _, err := b.Stat(ctx, "d/sub/x"); !errors.Is(err, store.ErrObjectStoreDown) {
		t.Errorf("Stat with the store down: %v", err)
	}
	if err := b.List(ctx, "", func(store.ObjectInfo) error { return nil }); !errors.Is(err, store.ErrObjectStoreDown) {
		t.Errorf("List with the store down: %v", err)
	}
	if k := store.KindOf(store.ErrObjectStoreDown); k != store.KindUnavailable {
		t.Errorf("ErrObjectStoreDown is kind %v", k)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("body broke") }

func TestOpenRefusesBadConfig(t *testing.T) {
	for _, c := range []Config{
		{Endpoint: "", AccessKey: "a", SecretKey: "b"},
		{Endpoint: "ftp://x", AccessKey: "a", SecretKey: "b"},
		{Endpoint: "http://x/path", AccessKey: "a", SecretKey: "b"},
		{Endpoint: "http://127.0.0.1:1", AccessKey: "", SecretKey: "b"},
	} {
		if _, err := Open(context.Background(), c, "bucket"); err == nil {
			t.Errorf("Open(%+v) accepted", c)
		}
	}
}

// Uploads beyond the slots wait, then get a 503 that names the cause;
// a slot freed is taken again.
func TestPutSlots(t *testing.T) {
	b, _ := open(t)
	b.puts = make(chan struct{}, 1)
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := b.Put(context.Background(), "slow", pr, store.ObjectPut{})
		done <- err
	}()
	pw.Write([]byte("first bytes")) // the first put holds the slot now
	start := time.Now()
	_, err := b.Put(context.Background(), "second", strings.NewReader("x"), store.ObjectPut{})
	if !errors.Is(err, ErrBusy) || store.KindOf(err) != store.KindUnavailable {
		t.Errorf("a put with no slot free: %v, want ErrBusy (503)", err)
	}
	if d := time.Since(start); d < putWait {
		t.Errorf("refused after %v, before waiting %v", d, putWait)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(context.Background(), "third", strings.NewReader("x"), store.ObjectPut{}); err != nil {
		t.Errorf("a put after the slot was freed: %v", err)
	}
}

// Compose joins objects: server-side (UploadPartCopy) when every source
// but the last has 5 MiB, else through hoard in parts, each source through
// Check; a failing check or a taken name leaves nothing.
func TestBucketCompose(t *testing.T) {
	b, m := open(t)
	ctx := context.Background()
	put := func(key string, data []byte) store.ObjectInfo {
		t.Helper()
		oi, err := b.Put(ctx, key, bytes.NewReader(data), store.ObjectPut{Size: int64(len(data))})
		if err != nil {
			t.Fatal(err)
		}
		return oi
	}
	big := func(seed byte, n int) []byte {
		d := make([]byte, n)
		for i := range d {
			d[i] = seed + byte(i*7/13)
		}
		return d
	}
	// Server-side: 5 MiB, 5 MiB, 1 byte.
	p := [][]byte{big(1, 5<<20), big(2, 5<<20), {9}}
	var srcs []store.ObjectInfo
	for i, d := range p {
		srcs = append(srcs, put("stage/s"+string(rune('a'+i)), d))
	}
	checked := 0
	check := func(i int, r io.Reader) io.Reader { checked++; return r }
	if _, err := b.Compose(ctx, "out/server", srcs, store.ObjectPut{NoClobber: true, Check: check, Meta: map[string]string{"hoard-wark": "w"}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Object(t, "bk1", "out/server"); !bytes.Equal(got, bytes.Join(p, nil)) {
		t.Error("server-side compose gave other bytes")
	}
	if checked != 0 {
		t.Errorf("a server-side compose read %d sources through hoard", checked)
	}
	if oi, _ := b.Stat(ctx, "out/server"); oi.Meta["hoard-wark"] != "w" {
		t.Errorf("compose lost the metadata: %v", oi.Meta)
	}
	// Through hoard: 40 sources of 1 MiB (parts of 16 MiB), the 3rd twice.
	var q [][]byte
	srcs = srcs[:0]
	for i := range 40 {
		d := big(byte(i), 1<<20)
		q = append(q, d)
		srcs = append(srcs, put("stage/m"+strings.Repeat("x", i), d))
	}
	srcs[5], q[5] = srcs[2], q[2]
	var seen []int
	check = func(i int, r io.Reader) io.Reader { seen = append(seen, i); return r }
	if _, err := b.Compose(ctx, "out/joined", srcs, store.ObjectPut{NoClobber: true, Check: check}); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Object(t, "bk1", "out/joined"); !bytes.Equal(got, bytes.Join(q, nil)) {
		t.Error("joined compose gave other bytes")
	}
	if len(seen) != 40 || seen[0] != 0 || seen[39] != 39 {
		t.Errorf("checked sources %v", seen)
	}
	// A check that fails on the 30th source: nothing visible, nothing left.
	check = func(i int, r io.Reader) io.Reader {
		if i == 30 {
			return io.MultiReader(io.LimitReader(r, 100), errReader{})
		}
		return r
	}
	if _, err := b.Compose(ctx, "out/failed", srcs, store.ObjectPut{NoClobber: true, Check: check}); err == nil {
		t.Error("a compose whose check failed succeeded")
	}
	if _, ok := m.Object(t, "bk1", "out/failed"); ok {
		t.Error("a failed compose left an object")
	}
	// No clobber: a taken name is ErrExists and stays as it was.
	if _, err := b.Compose(ctx, "out/server", srcs[:2], store.ObjectPut{NoClobber: true}); !errors.Is(err, store.ErrExists) {
		t.Errorf("compose onto a taken name: %v, want ErrExists", err)
	}
	if got, _ := m.Object(t, "bk1", "out/server"); !bytes.Equal(got, bytes.Join(p, nil)) {
		t.Error("a refused compose changed the object")
	}
	if inc := m.Incomplete(t, "bk1"); len(inc) != 0 {
		t.Errorf("composes left multipart uploads: %q", inc)
	}
	// AbortUploads ends what a dead node left, and only what is old enough.
	id, err := b.core.NewMultipartUpload(ctx, "bk1", "out/left", minio.PutObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AbortUploads(ctx, "out/left", time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if inc := m.Incomplete(t, "bk1"); len(inc) != 1 {
		t.Errorf("a young upload was aborted: %q", inc)
	}
	if err := b.AbortUploads(ctx, "out/left", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if inc := m.Incomplete(t, "bk1"); len(inc) != 0 {
		t.Errorf("AbortUploads left %q (upload %s)", inc, id)
	}
	// A sized put (an up2k chunk) whose body fails leaves nothing, not
	// even an unfinished upload, at any size.
	for _, n := range []int64{1000, 20 << 20} {
		_, err := b.Put(ctx, "stage/fail", io.MultiReader(bytes.NewReader(big(3, int(n)-1)), errReader{}), store.ObjectPut{Size: n})
		if err == nil {
			t.Errorf("a sized put of %d bytes whose body failed succeeded", n)
		}
		if _, ok := m.Object(t, "bk1", "stage/fail"); ok {
			t.Errorf("a failed sized put of %d bytes left an object", n)
		}
		if inc := m.Incomplete(t, "bk1"); len(inc) != 0 {
			t.Errorf("a failed sized put of %d bytes left %q", n, inc)
		}
	}
}

// WalkMeta lists every object below a prefix with its user metadata
// (MinIO's listing extension), with the same keys, sizes, ETags and
// whole-second times as Stat gives, page after page.
func TestBucketWalkMeta(t *testing.T) {
	b, _ := open(t)
	ctx := context.Background()
	const n = 1100 // more than one page of 1000
	for i := range n {
		meta := map[string]string{"hoard-uploader": "ed", "hoard-wark": strings.Repeat("w", 44)}
		if i%2 == 1 {
			meta = nil
		}
		if _, err := b.Put(ctx, fmt.Sprintf("p/d%d/k%04d", i%3, i), strings.NewReader("x"), store.ObjectPut{Meta: meta, Size: 1}); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now()
	var got []store.ObjectInfo
	if err := b.WalkMeta(ctx, "p/", func(oi store.ObjectInfo) error { got = append(got, oi); return nil }); err != nil {
		t.Fatal(err)
	}
	withMeta := time.Since(t0)
	t0 = time.Now()
	plain := 0
	if err := b.Walk(ctx, "p/", func(store.ObjectInfo) error { plain++; return nil }); err != nil {
		t.Fatal(err)
	}
	t.Logf("listing %d objects: %v with metadata, %v without", n, withMeta, time.Since(t0))
	if len(got) != n || plain != n {
		t.Fatalf("WalkMeta gave %d objects, Walk %d, want %d", len(got), plain, n)
	}
	for i, oi := range got {
		if oi.Meta == nil {
			t.Fatalf("%s: listed without metadata", oi.Key)
		}
		st, err := b.Stat(ctx, oi.Key)
		if err != nil {
			t.Fatal(err)
		}
		if st.ETag != oi.ETag || st.Size != oi.Size || !st.ModTime.Equal(oi.ModTime) || st.Meta["hoard-uploader"] != oi.Meta["hoard-uploader"] || st.Meta["hoard-wark"] != oi.Meta["hoard-wark"] {
			t.Fatalf("%s: listed as %+v, Stat says %+v", oi.Key, oi, st)
		}
		if i > 20 {
			break // enough HEADs
		}
	}
}

// Copy is server-side, keeps the source's metadata, refuses a taken
// destination under NoClobber and a source that changed since its Stat;
// Compose and Copy complete only while If-Match holds. Nothing refused
// leaves an object or an unfinished upload behind.
func TestBucketCopyAndIfMatch(t *testing.T) {
	b, m := open(t)
	ctx := context.Background()
	m.MakeBuckets(t, "bk2")
	b2, err := Open(ctx, Config{Endpoint: m.Endpoint(), AccessKey: miniotest.User, SecretKey: miniotest.Pass, Region: "us-east-1"}, "bk2")
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("copy me "), 100_000)
	if _, err := b.Put(ctx, "src", bytes.NewReader(data), store.ObjectPut{Meta: map[string]string{"hoard-uploader": "ed", "hoard-at": "x"}}); err != nil {
		t.Fatal(err)
	}
	src, err := b.Stat(ctx, "src")
	if err != nil {
		t.Fatal(err)
	}
	oi, err := b.Copy(ctx, "dst", b, src, store.ObjectPut{NoClobber: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Object(t, "bk1", "dst"); !bytes.Equal(got, data) || oi.Meta["hoard-uploader"] != "ed" || oi.Meta["hoard-at"] != "x" {
		t.Errorf("copy: %d bytes, meta %v", len(got), oi.Meta)
	}
	// Into another bucket of the same store.
	if _, err := b2.Copy(ctx, "there", b, src, store.ObjectPut{NoClobber: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Object(t, "bk2", "there"); !bytes.Equal(got, data) {
		t.Error("copy into another bucket differs")
	}
	// A taken destination is ErrExists and stays as it was.
	b.Put(ctx, "taken", strings.NewReader("mine"), store.ObjectPut{})
	if _, err := b.Copy(ctx, "taken", b, src, store.ObjectPut{NoClobber: true}); !errors.Is(err, store.ErrExists) {
		t.Errorf("copy onto a taken key: %v, want ErrExists", err)
	}
	if got, _ := m.Object(t, "bk1", "taken"); string(got) != "mine" {
		t.Errorf("a refused copy changed the destination: %q", got)
	}
	// A source that changed since its Stat is not copied.
	b.Put(ctx, "src", strings.NewReader("changed"), store.ObjectPut{})
	if _, err := b.Copy(ctx, "late", b, src, store.ObjectPut{NoClobber: true}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("copy of a changed source: %v, want ErrNotFound", err)
	}
	if _, ok := m.Object(t, "bk1", "late"); ok {
		t.Error("a refused copy left an object")
	}
	// An empty object copies.
	b.Put(ctx, "empty", strings.NewReader(""), store.ObjectPut{})
	e, _ := b.Stat(ctx, "empty")
	if oi, err := b.Copy(ctx, "empty2", b, e, store.ObjectPut{NoClobber: true}); err != nil || oi.Size != 0 {
		t.Errorf("copy of an empty object: %+v %v", oi, err)
	}
	// If-Match: a compose onto a key whose ETag moved on is refused.
	cur, _ := b.Stat(ctx, "taken")
	tail, _ := b.Put(ctx, "tail", strings.NewReader("+more"), store.ObjectPut{})
	if _, err := b.Compose(ctx, "taken", []store.ObjectInfo{cur, tail}, store.ObjectPut{IfMatch: "nope"}); !errors.Is(err, store.ErrExists) {
		t.Errorf("compose with a stale If-Match: %v, want ErrExists", err)
	}
	if _, err := b.Compose(ctx, "taken", []store.ObjectInfo{cur, tail}, store.ObjectPut{IfMatch: cur.ETag}); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Object(t, "bk1", "taken"); string(got) != "mine+more" {
		t.Errorf("compose with If-Match gave %q", got)
	}
	if inc := m.Incomplete(t, "bk1"); len(inc) != 0 {
		t.Errorf("unfinished uploads left: %q", inc)
	}
}

// gatedReader gives its bytes, but holds back everything past the first
// gate bytes until the barrier opens.
type gatedReader struct {
	r       io.Reader
	gate    int64
	n       int64
	reached func()
	wait    <-chan struct{}
	once    bool
}

func (g *gatedReader) Read(p []byte) (int, error) {
	if g.n >= g.gate && !g.once {
		g.once = true
		g.reached()
		<-g.wait
	}
	if g.n < g.gate && int64(len(p)) > g.gate-g.n {
		p = p[:g.gate-g.n]
	}
	n, err := g.r.Read(p)
	g.n += int64(n)
	return n, err
}

// Two streamed no-clobber uploads of one key at once (several parts
// each, both begun before either ends): exactly one is stored, the
// other is ErrExists, and the object is the winner's whole. (minio-go's
// own streamed upload checks If-None-Match only when it begins, so both
// were acknowledged and one was lost.) The same for If-Match.
func TestBucketStreamedPutPreconditionRace(t *testing.T) {
	b, m := open(t)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		opt  func() store.ObjectPut
	}{
		{"NoClobber", func() store.ObjectPut { return store.ObjectPut{NoClobber: true} }},
		{"IfMatch", func() store.ObjectPut {
			oi, err := b.Put(ctx, "race-IfMatch", strings.NewReader("old"), store.ObjectPut{})
			if err != nil {
				t.Fatal(err)
			}
			return store.ObjectPut{IfMatch: oi.ETag}
		}},
	} {
		key := "race-" + c.name
		opt := c.opt()
		bodies := [2][]byte{bytes.Repeat([]byte{'a'}, 20<<20), bytes.Repeat([]byte{'b'}, 20<<20)}
		var wg, reached sync.WaitGroup
		open := make(chan struct{})
		reached.Add(2)
		errs := make([]error, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := &gatedReader{r: bytes.NewReader(bodies[i]), gate: 17 << 20, reached: reached.Done, wait: open}
				_, errs[i] = b.Put(ctx, key, r, opt)
			}()
		}
		reached.Wait()
		time.Sleep(300 * time.Millisecond) // both first parts on their way
		close(open)
		wg.Wait()
		ok := 0
		for i, err := range errs {
			switch {
			case err == nil:
				ok++
				if got, _ := m.Object(t, "bk1", key); !bytes.Equal(got, bodies[i]) {
					t.Errorf("%s: the stored object is not upload %d's whole", c.name, i)
				}
			case !errors.Is(err, store.ErrExists):
				t.Errorf("%s: upload %d: %v", c.name, i, err)
			}
		}
		if ok != 1 {
			t.Errorf("%s: %d of two racing uploads stored (errors %v), want exactly one", c.name, ok, errs)
		}
	}
	if inc := m.Incomplete(t, "bk1"); len(inc) != 0 {
		t.Errorf("unfinished uploads left: %q", inc)
	}
}

// cutReader gives n bytes and then the error net/http gives for a body
// cut short of its Content-Length.
type cutReader struct{ n int }

func (c *cutReader) Read(p []byte) (int, error) {
	if c.n == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	k := min(c.n, len(p))
	c.n -= k
	return k, nil
}

// A body cut short is an error and stores nothing, whichever way the
// upload goes: one part or several, no-clobber (hoard's streamed
// upload) or a plain replace (minio-go's, which reads a bare
// io.ErrUnexpectedEOF as "the last part is short").
func TestBucketPutCutBody(t *testing.T) {
	b, _ := open(t)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		n    int
		opt  store.ObjectPut
	}{
		{"small-noclobber", 10, store.ObjectPut{NoClobber: true}},
		{"small-replace", 10, store.ObjectPut{}},
		{"parts-noclobber", partSize + 10, store.ObjectPut{NoClobber: true}},
		{"parts-replace", partSize + 10, store.ObjectPut{}},
	} {
		key := "cut/" + c.name
		_, err := b.Put(ctx, key, &cutReader{n: c.n}, c.opt)
		if !errors.Is(err, store.ErrShortBody) {
			t.Errorf("%s: Put = %v, want ErrShortBody", c.name, err)
		}
		if _, err := b.Stat(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: the cut body was stored (Stat: %v)", c.name, err)
		}
	}
}

// Uploads lists every unfinished multipart upload below a prefix, at any
// depth, and nothing outside it (the orphan sweep, up2k/remoteorphan.go).
func TestBucketUploads(t *testing.T) {
	b, _ := open(t)
	ctx := context.Background()
	want := map[string]string{}
	for _, k := range []string{"pre/a", "pre/b/c", "pre/.hist/up2k/x", "prefix-not/a", "other"} {
		id, err := b.core.NewMultipartUpload(ctx, b.bucket, k, minio.PutObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(k, "pre/") {
			want[k] = id
		}
	}
	got := map[string]string{}
	if err := b.Uploads(ctx, "pre/", func(u store.ObjectUpload) error {
		if u.Initiated.IsZero() || time.Since(u.Initiated) > time.Hour {
			t.Errorf("%s: begun at %v", u.Key, u.Initiated)
		}
		got[u.Key] = u.ID
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("uploads below pre/: %v, want %v", got, want)
	}
}

// A key longer than S3 takes is the client's bad name (400), never "the
// store is down" (503: clients would retry it for ever) or a bare error
// (500); nothing is stored.
func TestBucketKeyTooLong(t *testing.T) {
	b, m := open(t)
	ctx := context.Background()
	long := strings.Repeat("k", 1025)
	for _, opt := range []store.ObjectPut{{}, {Size: 4}, {NoClobber: true}} {
		if _, err := b.Put(ctx, long, strings.NewReader("data"), opt); !errors.Is(err, store.ErrKeyTooLong) || store.KindOf(err) != store.KindInvalid {
			t.Errorf("Put %+v of a key of 1025 bytes: %v, want ErrKeyTooLong", opt, err)
		}
	}
	if _, err := b.NewUpload(ctx, long, nil); !errors.Is(err, store.ErrKeyTooLong) {
		t.Errorf("NewUpload of a key of 1025 bytes: %v, want ErrKeyTooLong", err)
	}
	// No object has such a key: reads find nothing, without an error.
	if _, err := b.Stat(ctx, long); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Stat of a key of 1025 bytes: %v, want ErrNotFound", err)
	}
	if err := b.Walk(ctx, long+"/", func(store.ObjectInfo) error { return errors.New("listed") }); err != nil {
		t.Errorf("Walk below a key of 1025 bytes: %v", err)
	}
	if err := b.Delete(ctx, long); err != nil {
		t.Errorf("Delete of a key of 1025 bytes: %v", err)
	}
	if keys := m.Keys(t, "bk1"); len(keys) != 0 {
		t.Errorf("bucket holds %q", keys)
	}
	if inc := m.Incomplete(t, "bk1"); len(inc) != 0 {
		t.Errorf("multipart uploads left: %q", inc)
	}
}
