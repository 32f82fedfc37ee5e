package arch

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"runtime"
	"strings"
	"testing"

	"hoard/store"
)

// dirOnlyZip is a zip that is nothing but central directory: n entries
// of one-byte names (47 bytes each, the smallest), all pointing at offset
// 0, and an end record whose 16-bit count is n's low bits, which is all
// archive/zip checks of it.
func dirOnlyZip(n int) []byte {
	var b bytes.Buffer
	b.Grow(n*47 + 22)
	var h [46]byte
	binary.LittleEndian.PutUint32(h[0:], 0x02014b50)
	binary.LittleEndian.PutUint16(h[28:], 1) // name length
	for range n {
		b.Write(h[:])
		b.WriteByte('a')
	}
	var e [22]byte
	binary.LittleEndian.PutUint32(e[0:], 0x06054b50)
	binary.LittleEndian.PutUint16(e[8:], uint16(n))
	binary.LittleEndian.PutUint16(e[10:], uint16(n))
	binary.LittleEndian.PutUint32(e[12:], uint32(n*47))
	b.Write(e[:])
	return b.Bytes()
}

// TestZipDirectoryBounded: opening a zip that is 40 MiB of central
// directory (~900,000 members) for ?zls or ?zget is refused as invalid
// once ZipDirMax bytes of it were read, allocating a bounded amount
// (archive/zip alone would keep ~250 MiB of entries); an ordinary zip
// still lists.
func TestZipDirectoryBounded(t *testing.T) {
	z := dirOnlyZip(40 << 20 / 47)
	for name, open := range map[string]func() error{
		"list": func() error { _, _, err := ZipList(bytes.NewReader(z), int64(len(z))); return err },
		"get":  func() error { _, err := OpenZipMember(bytes.NewReader(z), int64(len(z)), "a"); return err },
	} {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		err := open()
		runtime.ReadMemStats(&m1)
		if k, msg, _, _ := store.Classify(err); k != store.KindInvalid || !strings.Contains(msg, "central directory") {
			t.Fatalf("%s: err %v, want KindInvalid naming the central directory", name, err)
		}
		if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 8*uint64(ZipDirMax) {
			t.Errorf("%s: allocated %d MiB opening it, want at most %d", name, alloc>>20, 8*ZipDirMax>>20)
		}
	}

	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, n := range []string{"x/", "x/a.txt", "b.txt"} {
		w, _ := zw.Create(n)
		w.Write([]byte(n))
	}
	zw.Close()
	list, more, err := ZipList(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil || more != 0 || len(list) != 3 {
		t.Fatalf("ordinary zip: %v, %d more, %v", list, more, err)
	}
	m, err := OpenZipMember(bytes.NewReader(b.Bytes()), int64(b.Len()), "x/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := m.WriteTo(&out); err != nil || out.String() != "x/a.txt" {
		t.Fatalf("member: %q, %v", out.String(), err)
	}
	m.Close()
}
