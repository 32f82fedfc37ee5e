package store

import (
	"slices"
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
