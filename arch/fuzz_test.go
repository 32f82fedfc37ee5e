package arch

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hoard/store"
)

// FuzzArchive: whatever tree and names, every format's archive reads back
// with Go's readers byte for byte, and Size predicts the length exactly.
// names holds up to 8 slash-separated paths, one a line; sizes come from
// seed.
func FuzzArchive(f *testing.F) {
	f.Add("a\nb/c\nd/e/f", uint64(1), uint8(0))
	f.Add("ünï\n日本/語\n"+strings.Repeat("x", 120)+"/y", uint64(7), uint8(3))
	f.Add("café ½\nÆ/Ø\n.dot/x", uint64(99), uint8(11))
	f.Add("a b\na%20b\n?*:|\"<>", uint64(5), uint8(12))
	f.Add(strings.Repeat("n/", 40)+"deep", uint64(513), uint8(1))
	f.Fuzz(func(t *testing.T, names string, seed uint64, fi uint8) {
		dir := t.TempDir()
		want := map[string][]byte{}
		for i, n := range strings.Split(names, "\n") {
			if i == 8 {
				break
			}
			ok := n != "" && len(n) < 400
			for _, c := range strings.Split(n, "/") {
				if store.CheckName(c) != nil || Excluded(c) || strings.EqualFold(c, store.HistName) {
					ok = false
				}
			}
			if !ok || strings.Contains(n, "\\") {
				continue
			}
			size := int((seed >> (i * 7)) % 3000)
			if i == 0 && seed%5 == 0 {
				size = 70_000 // past the sendfile threshold
			}
			data := randBytes(size, seed+uint64(i))
			if put2(dir, n, data) == nil {
				want[n] = data
				// a file now where another name wanted a folder, or the
				// reverse, is skipped by put2
			}
		}
		for n := range want {
			for m := range want {
				if strings.HasPrefix(m, n+"/") {
					delete(want, n) // cannot be both (put2 failed for one)
				}
			}
		}
		v := openVol(t, dir)
		list := walk(t, v, "")
		format := parse(t, allFormats[int(fi)%len(allFormats)])
		if format.Codec == XZ || format.Codec == Bzip2 {
			format.Level = 1 // keep the fuzzer fast
		}
		var buf bytes.Buffer
		if err := Write(context.Background(), &buf, format, list, Options{}); err != nil {
			t.Fatal(err)
		}
		if format.Sized() {
			if n, err := Size(format, list); err != nil || n != int64(buf.Len()) {
				t.Fatalf("Size = %d, %v; wrote %d", n, err, buf.Len())
			}
		}
		got := readBack(t, format, buf.Bytes())
		if len(got) != len(list) {
			t.Fatalf("read back %d entries, walked %d", len(got), len(list))
		}
		for _, fl := range list {
			data, err := readAll(dir, fl.Name)
			if err != nil {
				t.Fatal(err)
			}
			if m, ok := got[fl.Name]; !ok || !bytes.Equal(m.data, data) {
				t.Fatalf("%q: read back %d bytes (present %v), want %d", fl.Name, len(m.data), ok, len(data))
			}
		}
	})
}

func put2(dir, rel string, data []byte) error {
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := mkdirAll(filepath.Dir(p)); err != nil {
		return err
	}
	return writeNew(p, data)
}

func mkdirAll(p string) error { return os.MkdirAll(p, 0o755) }

func writeNew(p string, data []byte) error {
	return os.WriteFile(p, data, 0o644)
}

func readAll(dir, rel string) ([]byte, error) {
	return os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
}
