package store

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The append log's parser: records written by the log come back; lines
// that are torn, damaged or closed are not; nothing panics.
func FuzzAppendLog(f *testing.F) {
	f.Add([]byte(string(sealLine(appendRec{id: 1, dev: 2, ino: 3, old: 4, rel: "a b/c\n\"d"}.line()))+string(sealLine("E 1"))), uint8(0))
	f.Add([]byte("00000000 B 1 2 3 4 \"x\"\n"), uint8(3))
	f.Add(sealLine(appendRec{id: 7, dev: 1, ino: 1, old: 0, rel: "ü.txt"}.line()), uint8(200))
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		open := parseAppendLog(data)
		for _, r := range open {
			if r.id == 0 || r.old < 0 {
				t.Fatalf("bad record %+v", r)
			}
		}
		// Round trip: what the log writes, it reads back; a damaged or
		// torn copy never yields a record that was not written.
		recs := []appendRec{{id: 1, dev: 9, ino: 8, old: 7, rel: string(data)}, {id: 2, dev: 1, ino: 2, old: 3, rel: "x"}}
		var log []byte
		for _, r := range recs {
			log = append(log, sealLine(r.line())...)
		}
		log = append(log, sealLine("E 2")...)
		if got := parseAppendLog(log); !reflect.DeepEqual(got, recs[:1]) {
			t.Fatalf("round trip: %+v, want %+v", got, recs[:1])
		}
		torn := log[:int(cut)%(len(log)+1)]
		for _, r := range parseAppendLog(torn) {
			if !reflect.DeepEqual(r, recs[0]) && !reflect.DeepEqual(r, recs[1]) {
				t.Fatalf("a torn log gave a record never written: %+v", r)
			}
		}
		if len(log) > 0 {
			bad := bytes.Clone(log)
			bad[int(cut)%len(bad)] ^= 0x20
			for _, r := range parseAppendLog(bad) {
				if !reflect.DeepEqual(r, recs[0]) && !reflect.DeepEqual(r, recs[1]) {
					t.Fatalf("a damaged log gave a record never written: %+v", r)
				}
			}
		}
	})
}

func TestTempNames(t *testing.T) {
	for range 100 {
		if n := newTempName(); !isTempName(n) {
			t.Fatalf("%q is not taken for a temp name", n)
		}
	}
	for _, n := range []string{".hoard-.PARTIAL", ".hoard-old.PARTIAL", "x.hoard-AAAAAAAAAAAA.PARTIAL", ".hoard-AAAAAAAAAAAA.partial", ".hoard-AAAAAAAAAA=A.PARTIAL", ".hoard-AAAAAAAAAAAAA.PARTIAL"} {
		if isTempName(n) {
			t.Errorf("%q is taken for a temp name", n)
		}
	}
}

// A second process on the same state folder gets no crash recovery: it
// must not cut back appends or sweep files that the first may be writing.
func TestRunLockAndCleanStop(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Volumes: []VolumeSpec{{Src: dir, Perms: map[string]Perm{"*": PermRead | PermWrite}}}}
	a, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if v := a.Volumes()[0]; v.run == nil || v.run.unclean {
		t.Fatalf("first start: run %+v", v.run)
	}
	b, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if v := b.Volumes()[0]; v.run != nil {
		t.Fatal("a second store on the same state folder got the run lock")
	}
	b.Close()
	a.Close()
	if s, _ := os.ReadFile(filepath.Join(dir, HistName, runName)); string(s) != runStopped {
		t.Fatalf("after a clean stop the run file says %q", s)
	}
	// A run that did not stop cleanly is seen as such.
	os.WriteFile(filepath.Join(dir, HistName, runName), []byte(runRunning), 0o600)
	c, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Volumes()[0]; v.run == nil || !v.run.unclean {
		t.Fatal("an unclean stop was not noticed")
	}
	// Until its leftovers are swept, a clean stop does not hide it.
	c.Close()
	if s, _ := os.ReadFile(filepath.Join(dir, HistName, runName)); !strings.HasPrefix(string(s), "running") {
		t.Fatalf("the run file says %q before the sweep ran", s)
	}
	c, _ = Open(cfg)
	c.SweepLeftovers(nil)
	c.WaitSweeps()
	c.Close()
	if s, _ := os.ReadFile(filepath.Join(dir, HistName, runName)); string(s) != runStopped {
		t.Fatalf("after the sweep and a clean stop the run file says %q", s)
	}
}
