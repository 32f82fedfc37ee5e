package store

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReloadFlags: a reload replaces the flags that rule new requests
// and keeps (and reports) those that need a restart, whatever mix of
// them changes; the volume stays the same *Volume (the index and up2k
// know it by that pointer).
func TestReloadFlags(t *testing.T) {
	st, dirs := openStore(t, "::rw:c,e2d,sz=1-10")
	v := st.Volumes()[0]
	spec, err := ParseVolume(dirs[0] + "::rw:c,lifetime=60,sz=5-50,nodupe,rand,nrand=12,e2ts,hist=/elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.Reload(Config{Volumes: []VolumeSpec{spec}})
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Volumes()[0]; got != v {
		t.Fatal("the reload replaced the *Volume")
	}
	f := v.Flags()
	if f.Lifetime != time.Minute || f.SzMin != 5 || f.SzMax != 50 || !f.NoDupe || !f.Rand || f.NRand != 12 {
		t.Errorf("live flags not taken up: %+v", f)
	}
	if !f.E2D || f.E2DS || f.E2TS || f.E2T || f.Hist != "" {
		t.Errorf("restart flags changed: %+v", f)
	}
	if !slices.Equal(res.Changed, []string{"/: lifetime sz nodupe rand nrand"}) {
		t.Errorf("Changed = %q", res.Changed)
	}
	if !slices.Equal(res.Restart, []string{"/: hist e2t e2ts"}) {
		t.Errorf("Restart = %q", res.Restart)
	}
	if err := v.CheckSize(3); err == nil {
		t.Error("a 3-byte upload passed sz=5-50")
	}
	// Nothing changes: nothing reported.
	res, err = st.Reload(Config{Volumes: []VolumeSpec{spec}})
	if err != nil || len(res.Changed) != 0 || len(res.Restart) != 1 {
		t.Errorf("the same configuration again: %+v %v", res, err)
	}
}

// TestPrepareReloadAdds: a volume new to the Store is mounted by
// PrepareReload but resolves only after Commit, while readers resolve
// paths all along (-race); Abort of a reload that added one leaves the
// mounted volumes as they were and its state folder free for another
// Store; a source that is a file refuses the reload, naming the volume.
func TestPrepareReloadAdds(t *testing.T) {
	st, dirs := openStore(t, ":a:rw")
	a, err := ParseVolume(dirs[0] + ":a:rw")
	if err != nil {
		t.Fatal(err)
	}
	newDir := t.TempDir()
	b, err := ParseVolume(newDir + ":b:rw")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // readers during the reloads
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			st.Resolve([]string{"b", "x"})
			st.Mounted()
			st.Volumes()
		}
	}()
	defer func() { close(stop); <-done }()

	p, err := st.PrepareReload(Config{Volumes: []VolumeSpec{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Added()) != 1 || p.Added()[0].VPath != "b" {
		t.Fatalf("Added = %v", p.Added())
	}
	if v, _ := st.Resolve([]string{"b", "x"}); v != nil && v.VPath == "b" {
		t.Fatal("/b resolves before Commit")
	}
	p.Abort()
	if n := len(st.Mounted()); n != 1 {
		t.Fatalf("%d volumes mounted after Abort, want 1", n)
	}
	hist := filepath.Join(newDir, HistName)
	held.Lock()
	_, locked := held.m[hist]
	held.Unlock()
	if _, ok := st.locks[hist]; ok || locked {
		t.Fatal("the aborted reload kept /b's state folder locked")
	}
	if _, ok := st.runs[hist]; ok {
		t.Fatal("the aborted reload kept /b's run file")
	}

	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	bad, err := ParseVolume(f + ":bad:rw")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Reload(Config{Volumes: []VolumeSpec{a, b, bad}}); err == nil || !strings.Contains(err.Error(), "/bad") {
		t.Fatalf("a file as a volume's source: %v", err)
	}
	if len(st.Mounted()) != 1 || len(st.Volumes()) != 1 {
		t.Fatal("the refused reload changed the volumes")
	}

	res, err := st.Reload(Config{Volumes: []VolumeSpec{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Added, []string{"/b"}) {
		t.Fatalf("Added = %q", res.Added)
	}
	if v, rel := st.Resolve([]string{"b", "x"}); v == nil || v.VPath != "b" || rel != "x" {
		t.Fatalf("/b/x resolves to %v %q", v, rel)
	}
	if _, ok := st.locks[hist]; !ok || st.runs[hist] == nil {
		t.Fatal("/b is served without its state folder's lock and run file")
	}
}
