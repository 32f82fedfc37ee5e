package arch

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ulikunitz/xz"
	"golang.org/x/text/encoding/charmap"

	"hoard/store"
)

func openVol(t testing.TB, dir string) *store.Volume {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(store.Config{Volumes: []store.VolumeSpec{{Src: dir, Perms: map[string]store.Perm{"*": store.PermRead | store.PermDot}}}, Logger: quiet, Hist: filepath.Join(t.TempDir(), store.HistName)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st.Volumes()[0]
}

func put(t testing.TB, dir, rel string, data []byte) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// walk collects the whole volume under prefix.
func walk(t testing.TB, v *store.Volume, prefix string) []File {
	t.Helper()
	w := &Walker{Vol: v, Dots: true}
	if err := w.AddFolder(context.Background(), "", prefix); err != nil {
		t.Fatal(err)
	}
	if len(w.Errs) > 0 {
		t.Fatalf("walk errors: %v", w.Errs)
	}
	return w.Files
}

type member struct {
	data  []byte
	mode  int64
	mtime time.Time
}

// readBack decodes an archive with Go's readers: name → content, mode, mtime.
func readBack(t testing.TB, f Format, b []byte) map[string]member {
	t.Helper()
	out := map[string]member{}
	if f.Zip {
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("zip.NewReader: %v", err)
		}
		for _, zf := range zr.File {
			name := zf.Name
			if zf.Flags&0x800 == 0 {
				d, err := charmap.CodePage437.NewDecoder().String(name)
				if err != nil {
					t.Fatal(err)
				}
				name = d
			}
			rc, err := zf.Open()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			data, err := io.ReadAll(rc) // checks the CRC at the end
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out[name] = member{data: data, mode: int64(zf.Mode().Perm()), mtime: zf.Modified}
		}
		return out
	}
	var r io.Reader = bytes.NewReader(b)
	var err error
	switch f.Codec {
	case Gzip:
		r, err = gzip.NewReader(r)
	case XZ:
		r, err = xz.NewReader(r)
	case Bzip2:
		r = bzip2.NewReader(r)
	}
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("tar: %v", err)
		}
		if f.Pax && h.Format&tar.FormatPAX == 0 && h.Format != tar.FormatUSTAR {
			t.Errorf("%s: format %v, want pax", h.Name, h.Format)
		}
		if !f.Pax && h.Format != tar.FormatGNU && h.Format != tar.FormatUSTAR {
			t.Errorf("%s: format %v, want GNU", h.Name, h.Format)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %v", h.Name, err)
		}
		out[h.Name] = member{data: data, mode: h.Mode, mtime: h.ModTime}
	}
	return out
}

var allFormats = []string{"tar", "tar=pax", "tar=gz:0", "tar=gz", "tar=gz:9", "tar=pax,gz:1", "tar=xz:0", "tar=xz", "tar=bz2:1", "tar=bz2", "zip", "zip=dos", "zip=crc"}

func parse(t testing.TB, s string) Format {
	t.Helper()
	k, v, _ := strings.Cut(s, "=")
	var f Format
	var err error
	if k == "tar" {
		f, err = ParseTar(v)
	} else {
		f, err = ParseZip(v)
	}
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("long folder name ", 7) + "/" + strings.Repeat("é", 60) + ".txt" // > 100 bytes, non-ASCII
	files := map[string][]byte{
		"a.txt":                  []byte("hello\n"),
		"empty":                  {},
		"sub/ünï cødé ½.txt":     []byte("ü"),
		"sub/日本語.txt":            []byte("nihongo"),
		"sub/big.bin":            randBytes(300_000, 1),
		"sub/exact":              randBytes(512, 2),
		long:                     []byte("long"),
		".dot/inside":            []byte("dot"),
		"sub/deeper/x/y/z/w.dat": randBytes(70_000, 3),
	}
	for name, data := range files {
		put(t, dir, name, data)
	}
	os.Chmod(filepath.Join(dir, "a.txt"), 0o755)
	mt := time.Date(2021, 3, 4, 5, 6, 7, 890_000_000, time.UTC)
	os.Chtimes(filepath.Join(dir, "sub/big.bin"), mt, mt)
	v := openVol(t, dir)
	for _, fs := range allFormats {
		t.Run(fs, func(t *testing.T) {
			f := parse(t, fs)
			list := walk(t, v, "top/")
			var buf bytes.Buffer
			if err := Write(context.Background(), &buf, f, list, Options{}); err != nil {
				t.Fatal(err)
			}
			if f.Sized() {
				if n, err := Size(f, list); err != nil || n != int64(buf.Len()) {
					t.Errorf("Size = %d, %v; wrote %d", n, err, buf.Len())
				}
			}
			if !f.Zip && f.Codec == "" && buf.Len()%10240 != 0 {
				t.Errorf("tar of %d bytes is not whole 10240-byte records", buf.Len())
			}
			got := readBack(t, f, buf.Bytes())
			if len(got) != len(files) {
				t.Errorf("%d entries, want %d: %v", len(got), len(files), keys(got))
			}
			for name, data := range files {
				m, ok := got["top/"+name]
				if !ok {
					t.Errorf("missing %q", name)
					continue
				}
				if !bytes.Equal(m.data, data) {
					t.Errorf("%s: %d bytes differ from the %d written", name, len(m.data), len(data))
				}
			}
			if m := got["top/a.txt"]; m.mode != 0o755 {
				t.Errorf("a.txt mode %o, want 755", m.mode)
			}
			m := got["top/sub/big.bin"]
			want := mt.Truncate(time.Second)
			if f.Pax {
				want = mt
			}
			if !m.mtime.Equal(want) {
				t.Errorf("big.bin mtime %v, want %v", m.mtime, want)
			}
		})
	}
}

func keys(m map[string]member) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func randBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// sendfileRecorder stands for the HTTP response: it records what its
// ReadFrom was handed.
type sendfileRecorder struct {
	bytes.Buffer
	files int // ReadFrom calls whose source is (a limit on) an *os.File
}

func (s *sendfileRecorder) ReadFrom(r io.Reader) (int64, error) {
	src := r
	if lr, ok := r.(*io.LimitedReader); ok {
		src = lr.R
	}
	if _, ok := src.(*os.File); ok {
		s.files++
	}
	return s.Buffer.ReadFrom(r)
}

func TestTarBodiesReachReadFrom(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "big1", randBytes(200_000, 4))
	put(t, dir, "big2", randBytes(1<<20, 5))
	put(t, dir, "small", []byte("small files go through the buffer"))
	v := openVol(t, dir)
	for _, tc := range []struct {
		format string
		want   int
	}{{"tar", 2}, {"tar=pax", 2}, {"tar=gz", 0}, {"zip", 0}} {
		var rec sendfileRecorder
		f := parse(t, tc.format)
		if err := Write(context.Background(), &rec, f, walk(t, v, "x/"), Options{}); err != nil {
			t.Fatal(err)
		}
		if rec.files != tc.want {
			t.Errorf("%s: ReadFrom got an *os.File %d times, want %d", tc.format, rec.files, tc.want)
		}
		if got := readBack(t, f, rec.Bytes()); len(got) != 3 {
			t.Errorf("%s: %d entries", tc.format, len(got))
		}
	}
}

func TestChangedSizeAborts(t *testing.T) {
	for _, fs := range []string{"tar", "tar=gz", "zip", "zip=crc"} {
		for _, change := range []string{"grow", "shrink"} {
			for _, size := range []int{0, 1000, 100_000} { // read ahead, read in turn
				dir := t.TempDir()
				put(t, dir, "a", []byte("first"))
				put(t, dir, "f", randBytes(size, 6))
				v := openVol(t, dir)
				list := walk(t, v, "")
				data := randBytes(size+size/2+1, 7)
				if change == "shrink" {
					if size == 0 {
						continue
					}
					data = data[:size/2]
				}
				put(t, dir, "f", data)
				err := Write(context.Background(), io.Discard, parse(t, fs), list, Options{})
				if !errors.Is(err, ErrChanged) {
					t.Errorf("%s, %d-byte file %s: Write = %v, want ErrChanged", fs, size, change, err)
				}
			}
		}
	}
}

// growing grows a file while the tar body is being sent.
type growing struct {
	bytes.Buffer
	path string
	done bool
}

func (g *growing) Write(p []byte) (int, error) {
	if !g.done && g.Len() > 1000 {
		g.done = true
		f, _ := os.OpenFile(g.path, os.O_APPEND|os.O_WRONLY, 0)
		f.Write([]byte("more"))
		f.Close()
	}
	return g.Buffer.Write(p)
}

func TestGrowingDuringBodyAborts(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "f", randBytes(500_000, 8))
	v := openVol(t, dir)
	g := &growing{path: filepath.Join(dir, "f")}
	err := Write(context.Background(), g, Format{}, walk(t, v, ""), Options{SendfileMin: 1 << 40})
	if !errors.Is(err, ErrChanged) {
		t.Fatalf("Write = %v, want ErrChanged", err)
	}
}

func TestCanceledStops(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "f", randBytes(100_000, 9))
	v := openVol(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, fs := range []string{"tar", "tar=xz", "tar=bz2", "zip"} {
		if err := Write(ctx, io.Discard, parse(t, fs), walk(t, v, ""), Options{}); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Write = %v, want context.Canceled", fs, err)
		}
	}
}

func TestExclusionsAndLoops(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"keep", "up2k.db", "dir.txt", "x.PARTIAL", ".hoard-tmp", "sub/dir.txt", "sub/keep2", ".dot/k"} {
		put(t, dir, n, []byte(n))
	}
	os.Symlink("..", filepath.Join(dir, "sub", "loop"))
	os.Symlink("/etc", filepath.Join(dir, "out"))
	os.Symlink("/etc/hostname", filepath.Join(dir, "outfile"))
	os.Symlink("keep", filepath.Join(dir, "inlink"))
	v := openVol(t, dir)
	w := &Walker{Vol: v}
	if err := w.AddFolder(context.Background(), "", ""); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range w.Files {
		names = append(names, f.Name)
	}
	if got, want := strings.Join(names, ","), "inlink,keep,sub/keep2"; got != want {
		t.Errorf("entries %s, want %s", got, want)
	}
	w = &Walker{Vol: v, Dots: true}
	w.AddFolder(context.Background(), "", "")
	names = nil
	for _, f := range w.Files {
		names = append(names, f.Name)
	}
	if got, want := strings.Join(names, ","), "inlink,keep,.dot/k,sub/keep2"; got != want {
		t.Errorf("with dots: entries %s, want %s (a folder's files, then its folders)", got, want)
	}
}

func TestCP437Names(t *testing.T) {
	for _, tc := range []struct {
		name string
		utf8 bool
	}{{"plain.txt", false}, {"café ÿ ½ Ä.txt", false}, {"日本.txt", true}, {"Ø.txt", true}} {
		b, flags := zipName(tc.name, true)
		if (flags&flagUTF8 != 0) != tc.utf8 {
			t.Errorf("%q: flags %#x, want UTF-8 flag %v", tc.name, flags, tc.utf8)
		}
		if !tc.utf8 {
			d, _ := charmap.CodePage437.NewDecoder().Bytes(b)
			if string(d) != tc.name {
				t.Errorf("%q: CP437 bytes %x decode to %q", tc.name, b, d)
			}
		}
	}
	b, _ := zipName("é", true)
	if !bytes.Equal(b, []byte{0x82}) {
		t.Errorf("é in CP437 = %x, want 82", b)
	}
}

// TestHugeSizes checks the headers of entries past 8 GiB (tar's octal
// limit) and 4 GiB (zip32) on sparse files, without moving their bytes:
// the first header is read from a pipe, then the writer is stopped.
func TestHugeSizes(t *testing.T) {
	dir := t.TempDir()
	const size = 8<<30 + 12345
	f, err := os.Create(filepath.Join(dir, "huge"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Skipf("no sparse files here: %v", err)
	}
	f.Close()
	v := openVol(t, dir)
	list := walk(t, v, "")
	for _, fs := range []string{"tar", "tar=pax"} {
		f := parse(t, fs)
		n, err := Size(f, list)
		if want := int64(512 + size + (512-size%512)%512 + 1024); err != nil || n < want || n%10240 != 0 {
			t.Errorf("%s: Size = %d, %v; want ≥ %d in whole records", fs, n, err, want)
		}
		pr, pw := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- Write(ctx, pw, f, list, Options{}); pw.Close() }()
		h, err := tar.NewReader(pr).Next()
		cancel()
		pr.Close()
		<-done
		if err != nil || h.Size != size || h.Name != "huge" {
			t.Errorf("%s: header %+v, %v", fs, h, err)
		}
	}
}

// TestFolderHandles: files are opened through a handle on their folder;
// links to other folders of the volume still work (by their full path),
// and a folder swapped for a link out of the volume after the walk is
// never entered: the archive fails instead of carrying outside bytes.
func TestFolderHandles(t *testing.T) {
	for _, size := range []int{10, 100_000} { // read ahead, read in turn
		for _, fs := range []string{"tar", "zip", "zip=crc", "tar=gz"} {
			dir := t.TempDir()
			put(t, dir, "a/f", randBytes(size, 10))
			put(t, dir, "b/g", randBytes(size, 11))
			if err := os.Symlink("../b/g", filepath.Join(dir, "a", "up")); err != nil {
				t.Fatal(err)
			}
			v := openVol(t, dir)
			list := walk(t, v, "")
			var buf bytes.Buffer
			if err := Write(context.Background(), &buf, parse(t, fs), list, Options{}); err != nil {
				t.Fatalf("%s: %v", fs, err)
			}
			got := readBack(t, parse(t, fs), buf.Bytes())
			if !bytes.Equal(got["a/up"].data, randBytes(size, 11)) || !bytes.Equal(got["a/f"].data, randBytes(size, 10)) {
				t.Errorf("%s, %d bytes: the link to ../b/g or a/f came out wrong (%v)", fs, size, keys(got))
			}

			// a/f becomes a link to ../b/g after the walk: the folder's
			// handle refuses it, the volume's root follows it.
			if err := os.Remove(filepath.Join(dir, "a", "f")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../b/g", filepath.Join(dir, "a", "f")); err != nil {
				t.Fatal(err)
			}
			buf.Reset()
			if err := Write(context.Background(), &buf, parse(t, fs), list, Options{}); err != nil {
				t.Fatalf("%s: after a/f became a link: %v", fs, err)
			}
			if got := readBack(t, parse(t, fs), buf.Bytes()); !bytes.Equal(got["a/f"].data, randBytes(size, 11)) {
				t.Errorf("%s, %d bytes: a/f, now a link to ../b/g, came out wrong", fs, size)
			}

			// Now a/ becomes a link to a folder outside with the same names.
			outside := t.TempDir()
			put(t, outside, "f", bytes.Repeat([]byte("S"), size))
			put(t, outside, "up", bytes.Repeat([]byte("S"), size))
			if err := os.RemoveAll(filepath.Join(dir, "a")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(dir, "a")); err != nil {
				t.Fatal(err)
			}
			buf.Reset()
			err := Write(context.Background(), &buf, parse(t, fs), list, Options{})
			if !errors.Is(err, store.ErrOutside) {
				t.Errorf("%s, %d bytes: Write after the swap = %v, want ErrOutside", fs, size, err)
			}
			if bytes.Contains(buf.Bytes(), []byte("SSSSSSSSSS")) {
				t.Errorf("%s, %d bytes: outside bytes in the archive", fs, size)
			}
		}
	}
}

// TestGNUHeaderFastPath: the hand-made header is archive/tar's, byte for
// byte, whenever it claims to be able to make it.
func TestGNUHeaderFastPath(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	names := []string{"", "a", "x/y/z.txt", "日本/ünï cødé ½.txt", strings.Repeat("n", 99), strings.Repeat("n", 100), strings.Repeat("n", 101), strings.Repeat("é", 50), "a\x00b"}
	sizes := []int64{0, 1, 511, 512, 1<<33 - 1, 1 << 33, -1}
	mtimes := []int64{0, 1, 1700000000, 1<<33 - 1, 1 << 33, -1}
	modes := []uint32{0, 0o644, 0o7777, 1<<21 - 1, 1 << 21}
	for range 2000 {
		name := names[r.IntN(len(names))]
		if r.IntN(3) == 0 {
			b := make([]byte, r.IntN(110))
			for i := range b {
				b[i] = byte(1 + r.IntN(255))
			}
			name = string(b)
		}
		size, mtime, mode := sizes[r.IntN(len(sizes))], mtimes[r.IntN(len(mtimes))], modes[r.IntN(len(modes))]
		if r.IntN(2) == 0 {
			size, mtime, mode = r.Int64N(1<<34), r.Int64N(1<<34), uint32(r.IntN(1<<22))
		}
		var blk [512]byte
		ok := gnuHeader(&blk, name, size, mode, mtime)
		var buf bytes.Buffer
		err := tar.NewWriter(&buf).WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: int64(mode), ModTime: time.Unix(mtime, 0), Format: tar.FormatGNU})
		switch {
		case !ok:
			if len(name) <= 100 && !strings.Contains(name, "\x00") && size >= 0 && size < 1<<33 && mode < 1<<21 && mtime >= 0 && mtime < 1<<33 {
				t.Errorf("no fast header for %q %d %o %d", name, size, mode, mtime)
			}
		case err != nil:
			t.Errorf("fast header for %q %d %o %d, which archive/tar refuses: %v", name, size, mode, mtime, err)
		case !bytes.Equal(blk[:], buf.Bytes()):
			t.Errorf("%q %d %o %d: fast header differs from archive/tar's", name, size, mode, mtime)
		}
	}
}

// TestWalkOrder: with sub-folders listed ahead concurrently, the walk still
// yields copyparty's order (a folder's files by name, then each sub-folder
// in turn), the same every time.
func TestWalkOrder(t *testing.T) {
	dir := t.TempDir()
	var want []string
	for i := range 9 {
		for j := range 3 {
			for k := range 2 {
				put(t, dir, filepath.Join(string(rune('a'+i)), string(rune('a'+j)), string(rune('x'+k))), []byte{byte(k)})
			}
		}
		put(t, dir, filepath.Join(string(rune('a'+i)), "zz"), []byte("f"))
	}
	put(t, dir, "top", []byte("t"))
	want = append(want, "top")
	for i := range 9 {
		d := string(rune('a' + i))
		want = append(want, d+"/zz")
		for j := range 3 {
			for k := range 2 {
				want = append(want, d+"/"+string(rune('a'+j))+"/"+string(rune('x'+k)))
			}
		}
	}
	v := openVol(t, dir)
	for range 20 {
		var got []string
		for _, f := range walk(t, v, "") {
			got = append(got, f.Name)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("walk order\n%v\nwant\n%v", got, want)
		}
	}
}

// TestBatchBuffers: small files read ahead share one buffer per batch;
// an archive of many batches (sizes from empty to just under the
// read-ahead limit, big ones between) holds every file's own bytes, the
// buffers go back to the free list (never more than it keeps), and a
// second archive reuses them.
func TestBatchBuffers(t *testing.T) {
	dir := t.TempDir()
	want := map[string][]byte{}
	for i := range 700 {
		size := []int{0, 1, 4096, 9000, 64<<10 - 1, 65 << 10, 300}[i%7]
		name := fmt.Sprintf("d%d/f%04d", i%3, i)
		want[name] = randBytes(size, uint64(i))
		put(t, dir, name, want[name])
	}
	v := openVol(t, dir)
	for len(batchFree) > 0 {
		<-batchFree
	}
	for round := range 2 {
		for _, fs := range []string{"tar", "zip"} {
			var b bytes.Buffer
			if err := Write(context.Background(), &b, parse(t, fs), walk(t, v, ""), Options{}); err != nil {
				t.Fatal(err)
			}
			got := readBack(t, parse(t, fs), b.Bytes())
			for name, data := range want {
				if m, ok := got[name]; !ok || !bytes.Equal(m.data, data) {
					t.Fatalf("round %d, %s: %s has %d bytes, want its own %d", round, fs, name, len(m.data), len(data))
				}
			}
			if n := len(batchFree); n == 0 || n > cap(batchFree) {
				t.Fatalf("round %d, %s: %d buffers on the free list after the archive", round, fs, n)
			}
		}
	}
}
