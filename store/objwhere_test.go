package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// memObjects is an ObjectStore in memory, enough for the state areas:
// Stat, Put, Walk, Delete.
type memObjects struct {
	mu   sync.Mutex
	objs map[string]ObjectInfo
	now  time.Time
	down bool
	ups  []ObjectUpload // unfinished multipart uploads, for Uploads
}

func (m *memObjects) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return ObjectInfo{}, ErrObjectStoreDown
	}
	oi, ok := m.objs[key]
	if !ok {
		return ObjectInfo{}, fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	return oi, nil
}

func (m *memObjects) Put(ctx context.Context, key string, r io.Reader, opt ObjectPut) (ObjectInfo, error) {
	b, _ := io.ReadAll(r)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return ObjectInfo{}, ErrObjectStoreDown
	}
	if _, ok := m.objs[key]; ok && opt.NoClobber {
		return ObjectInfo{}, ErrExists
	}
	oi := ObjectInfo{Key: key, Size: int64(len(b)), ETag: fmt.Sprint(len(m.objs)), ModTime: m.now, Meta: opt.Meta}
	m.objs[key] = oi
	return oi, nil
}

func (m *memObjects) Walk(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	m.mu.Lock()
	if m.down {
		m.mu.Unlock()
		return ErrObjectStoreDown
	}
	var keys []string
	for k := range m.objs {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	ois := make([]ObjectInfo, len(keys))
	for i, k := range keys {
		ois[i] = m.objs[k]
	}
	m.mu.Unlock()
	for _, oi := range ois {
		if err := fn(oi); err != nil {
			return err
		}
	}
	return nil
}

func (m *memObjects) Delete(ctx context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objs, key)
	return nil
}

func (m *memObjects) Open(context.Context, ObjectInfo) (io.ReadSeekCloser, error) {
	return nil, errors.New("not in memObjects")
}
func (m *memObjects) List(context.Context, string, func(ObjectInfo) error) error {
	return errors.New("not in memObjects")
}
func (m *memObjects) Compose(context.Context, string, []ObjectInfo, ObjectPut) (ObjectInfo, error) {
	return ObjectInfo{}, errors.New("not in memObjects")
}
func (m *memObjects) AbortUploads(context.Context, string, time.Time) error { return nil }
func (m *memObjects) Uploads(_ context.Context, prefix string, fn func(ObjectUpload) error) error {
	if m.ups == nil {
		return errors.New("not in memObjects")
	}
	for _, u := range m.ups {
		if strings.HasPrefix(u.Key, prefix) {
			if err := fn(u); err != nil {
				return err
			}
		}
	}
	return nil
}
func (m *memObjects) NewUpload(context.Context, string, map[string]string) (string, error) {
	return "", errors.New("not in memObjects")
}
func (m *memObjects) PutPart(context.Context, string, string, int, io.Reader, int64) (ObjectPart, error) {
	return ObjectPart{}, errors.New("not in memObjects")
}
func (m *memObjects) ComposePart(context.Context, string, string, int, []ObjectInfo, func(int, io.Reader) io.Reader) (ObjectPart, error) {
	return ObjectPart{}, errors.New("not in memObjects")
}
func (m *memObjects) Parts(context.Context, string, string) ([]ObjectPart, error) {
	return nil, errors.New("not in memObjects")
}
func (m *memObjects) Complete(context.Context, string, string, []ObjectPart, ObjectPut) (ObjectInfo, error) {
	return ObjectInfo{}, errors.New("not in memObjects")
}
func (m *memObjects) AbortUpload(context.Context, string, string) error { return nil }
func (m *memObjects) Copy(context.Context, string, ObjectStore, ObjectInfo, ObjectPut) (ObjectInfo, error) {
	return ObjectInfo{}, errors.New("not in memObjects")
}

func memVolume(now time.Time) (*Volume, *memObjects) {
	mo := &memObjects{objs: map[string]ObjectInfo{}, now: now}
	st := &Store{log: slog.New(slog.DiscardHandler), now: func() time.Time { return now }}
	return &Volume{obj: mo, objPre: "pre/", store: st}, mo
}

// UpWhere, whatever the records and objects: it returns exactly the
// records whose object names the wark (in path order), deletes exactly
// the stale records older than the grace, keeps young stale ones (a
// publish under way) and ignores keys that are no volume path.
func TestUpWhereProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	wark, other := strings.Repeat("A", 44), strings.Repeat("B", 44)
	now := time.Unix(1_800_000_000, 0)
	for round := range 300 {
		v, mo := memVolume(now)
		var want, keep, gone []string
		for i := range rng.IntN(8) {
			rel := fmt.Sprintf("d%d/f%d.bin", rng.IntN(3), i)
			rec := "pre/.hist/where/" + wark + "/" + rel
			old := rng.IntN(2) == 0
			at := now.Add(-time.Minute)
			if old {
				at = now.Add(-whereGrace - time.Minute)
			}
			mo.objs[rec] = ObjectInfo{Key: rec, ModTime: at}
			switch rng.IntN(3) {
			case 0: // the file with this content
				mo.objs["pre/"+rel] = ObjectInfo{Key: "pre/" + rel, Size: 5, Meta: map[string]string{"hoard-wark": wark}}
				want = append(want, rel)
				keep = append(keep, rec)
			case 1: // replaced by other content
				mo.objs["pre/"+rel] = ObjectInfo{Key: "pre/" + rel, Size: 5, Meta: map[string]string{"hoard-wark": other}}
				fallthrough
			default: // or gone
				if old {
					gone = append(gone, rec)
				} else {
					keep = append(keep, rec)
				}
			}
		}
		// Keys no request path could name, and another content's record.
		for _, bad := range []string{"../x", "a/../../x", ".hist/x", "a//b", "x.PARTIAL", ""} {
			mo.objs["pre/.hist/where/"+wark+"/"+bad] = ObjectInfo{Key: "pre/.hist/where/" + wark + "/" + bad, ModTime: now.Add(-48 * time.Hour)}
		}
		mo.objs["pre/.hist/where/"+other+"/z"] = ObjectInfo{Key: "pre/.hist/where/" + other + "/z"}
		mo.objs["pre/z"] = ObjectInfo{Key: "pre/z", Meta: map[string]string{"hoard-wark": other}}
		ois, rels, err := v.UpWhere(context.Background(), wark)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(want)
		if !slices.Equal(rels, want) || len(ois) != len(rels) {
			t.Fatalf("round %d: UpWhere = %q, want %q", round, rels, want)
		}
		for i, oi := range ois {
			if oi.Key != "pre/"+rels[i] {
				t.Fatalf("round %d: object %q for %q", round, oi.Key, rels[i])
			}
		}
		for _, k := range keep {
			if _, ok := mo.objs[k]; !ok {
				t.Fatalf("round %d: record %s deleted", round, k)
			}
		}
		for _, k := range gone {
			if _, ok := mo.objs[k]; ok {
				t.Fatalf("round %d: stale old record %s kept", round, k)
			}
		}
	}
	// A bad wark looks nothing up; a store down is its error.
	v, mo := memVolume(now)
	if _, rels, err := v.UpWhere(context.Background(), "../x"); err != nil || rels != nil {
		t.Errorf("a bad wark: %q, %v", rels, err)
	}
	mo.down = true
	if _, _, err := v.UpWhere(context.Background(), wark); !errors.Is(err, ErrObjectStoreDown) {
		t.Errorf("the store down: %v", err)
	}
	// objWhere writes nothing for an object without a wark, or a key too
	// long for S3.
	mo.down = false
	v.objWhere(context.Background(), "a", map[string]string{"hoard-wark": "short"})
	v.objWhere(context.Background(), strings.Repeat("n", MaxObjectKey), map[string]string{"hoard-wark": wark})
	if len(mo.objs) != 0 {
		t.Errorf("records written: %v", mo.objs)
	}
}

// The caps' marks: counted per address and in all, bounded, only marks
// named by a wark; swept when old and no longer unfinished.
func TestUpMarks(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	v, mo := memVolume(now)
	ctx := context.Background()
	w := func(i int) string { return fmt.Sprintf("%044d", i) }
	for i := range 5 {
		if err := v.UpMark(ctx, "10.0.0.1", w(i)); err != nil {
			t.Fatal(err)
		}
	}
	v.UpMark(ctx, "2001:db8::/64", w(9))
	mo.objs[v.markDir("10.0.0.1")+"junk"] = ObjectInfo{Key: v.markDir("10.0.0.1") + "junk"}
	if err := v.UpMark(ctx, "10.0.0.1", "../../x"); err == nil {
		t.Error("a mark with a bad wark")
	}
	for _, c := range []struct {
		key      string
		max, got int
	}{{"10.0.0.1", 100, 5}, {"10.0.0.1", 3, 3}, {"2001:db8::/64", 100, 1}, {"10.0.0.2", 100, 0}, {"", 100, 6}} {
		if n, err := v.UpCountMarks(ctx, c.key, c.max); err != nil || n != c.got {
			t.Errorf("UpCountMarks(%q, %d) = %d, %v; want %d", c.key, c.max, n, err, c.got)
		}
	}
	var listed []string
	v.UpMarks(ctx, "10.0.0.1", 2, func(wark string, _ time.Time) { listed = append(listed, wark) })
	if !slices.Equal(listed, []string{w(0), w(1)}) {
		t.Errorf("UpMarks: %q", listed)
	}
	v.UpUnmark(ctx, "10.0.0.1", w(0))
	// Swept: old and not kept (w(2)), and the junk; kept: w(1) (live), w(3) (young).
	for k, oi := range mo.objs {
		if !strings.HasSuffix(k, w(3)) {
			oi.ModTime = now.Add(-time.Hour)
			mo.objs[k] = oi
		}
	}
	n, err := v.UpSweepMarks(ctx, now.Add(-time.Minute), func(wark string) bool { return wark == w(1) || wark == w(4) || wark == w(9) })
	if err != nil || n != 2 {
		t.Errorf("UpSweepMarks: %d, %v; want 2", n, err)
	}
	if got, _ := v.UpCountMarks(ctx, "10.0.0.1", 100); got != 3 {
		t.Errorf("after the sweep: %d marks, want 3 (w1, w3, w4)", got)
	}
}

// UpUploads leaves out the uploads of another volume whose prefix lies
// inside this one's in the same bucket: that volume's sessions, not this
// one's, say which of them are orphans (the sweep would abort a live
// upload this volume's sessions do not name).
func TestUpUploadsLeavesNestedVolumes(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	outer, mo := memVolume(now)
	st := outer.store
	flags := func(s3 string) *Flags { f := Flags{S3: s3}; return &f }
	outer.flags.Store(flags("b/pre"))
	inner := &Volume{obj: mo, objPre: "pre/sub/", store: st}
	inner.flags.Store(flags("b/pre/sub"))
	elsewhere := &Volume{obj: mo, objPre: "pre/other/", store: st}
	elsewhere.flags.Store(flags("c/pre/other")) // another bucket: its keys are not these
	vols := []*Volume{inner, elsewhere, outer}
	st.vols.Store(&vols)
	mo.ups = []ObjectUpload{
		{Key: "pre/a/f.bin", ID: "1"},
		{Key: "pre/sub/g.bin", ID: "2"},
		{Key: "pre/subway/h.bin", ID: "3"},
		{Key: "pre/other/i.bin", ID: "4"},
		{Key: "pre/.hist/up2k/x", ID: "5"},
	}
	list := func(v *Volume) []string {
		var got []string
		if err := v.UpUploads(context.Background(), func(rel string, u ObjectUpload) error {
			got = append(got, rel+"#"+u.ID)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got, want := list(outer), []string{"a/f.bin#1", "subway/h.bin#3", "other/i.bin#4", ".hist/up2k/x#5"}; !slices.Equal(got, want) {
		t.Errorf("the outer volume's uploads: %q, want %q", got, want)
	}
	if got, want := list(inner), []string{"g.bin#2"}; !slices.Equal(got, want) {
		t.Errorf("the inner volume's uploads: %q, want %q", got, want)
	}
}
