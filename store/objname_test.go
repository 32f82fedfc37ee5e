package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// bodyObjects is memObjects with bodies, unique ETags and If-Match, as
// the holds need (a conditional PUT of the store).
type bodyObjects struct {
	*memObjects
	body map[string][]byte
	n    int
}

func (o *bodyObjects) Put(ctx context.Context, key string, r io.Reader, opt ObjectPut) (ObjectInfo, error) {
	b, _ := io.ReadAll(r)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.down {
		return ObjectInfo{}, ErrObjectStoreDown
	}
	cur, ok := o.objs[key]
	switch {
	case ok && opt.NoClobber:
		return ObjectInfo{}, fmt.Errorf("%w: %s", ErrExists, key)
	case opt.IfMatch != "" && !ok:
		return ObjectInfo{}, fmt.Errorf("%s: %w", key, ErrNotFound)
	case opt.IfMatch != "" && cur.ETag != opt.IfMatch:
		return ObjectInfo{}, fmt.Errorf("%w: %s", ErrExists, key)
	}
	o.n++
	oi := ObjectInfo{Key: key, Size: int64(len(b)), ETag: fmt.Sprintf("e%d", o.n), ModTime: o.now}
	o.objs[key] = oi
	o.body[key] = b
	return oi, nil
}

func (o *bodyObjects) Open(_ context.Context, oi ObjectInfo) (io.ReadSeekCloser, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	cur, ok := o.objs[oi.Key]
	if !ok || cur.ETag != oi.ETag {
		return seekNopReader{errReader{fmt.Errorf("%w: %s changed", ErrNotFound, oi.Key)}}, nil
	}
	return seekNopReader{bytes.NewReader(o.body[oi.Key])}, nil
}

func holdVolume() (*Volume, *bodyObjects) {
	v, mo := memVolume(time.Unix(1_800_000_000, 0))
	bo := &bodyObjects{memObjects: mo, body: map[string][]byte{}}
	v.obj = bo
	return v, bo
}

// The holds of names (objname.go): one holder at a time, read back,
// taken over only from the version read, let go only by its holder or
// at the version looked at; an object in the hold area that is no hold
// reads as one without a wark; bad paths and warks are refused.
func TestUpHolds(t *testing.T) {
	ctx := context.Background()
	v, bo := holdVolume()
	w1, w2 := strings.Repeat("A", 44), "#"+strings.Repeat("b", 43)
	if err := v.UpHold(ctx, "d/x.bin", w1); err != nil {
		t.Fatal(err)
	}
	if err := v.UpHold(ctx, "d/x.bin", w2); !errors.Is(err, ErrExists) {
		t.Fatalf("a second hold of one name: %v, want ErrExists", err)
	}
	h, err := v.UpHolder(ctx, "d/x.bin")
	if err != nil || h.Wark != w1 || h.Rel != "d/x.bin" || h.ETag == "" {
		t.Fatalf("UpHolder: %+v %v", h, err)
	}
	if err := v.UpHoldOver(ctx, "d/x.bin", w2, "stale"); !errors.Is(err, ErrExists) {
		t.Fatalf("take-over from another version: %v, want ErrExists", err)
	}
	if err := v.UpHoldOver(ctx, "d/x.bin", w2, h.ETag); err != nil {
		t.Fatal(err)
	}
	if err := v.UpHoldOver(ctx, "d/x.bin", w1, h.ETag); !errors.Is(err, ErrExists) {
		t.Fatalf("a second take-over from the same version: %v, want ErrExists", err)
	}
	// The old version's drop (a sweep that judged it) leaves the new one;
	// so does letting go by the old holder.
	if err := v.UpDropHold(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := v.UpUnhold(ctx, "d/x.bin", w1, ""); err != nil {
		t.Fatal(err)
	}
	h2, err := v.UpHolder(ctx, "d/x.bin")
	if err != nil || h2.Wark != w2 {
		t.Fatalf("after a stale drop and another's unhold: %+v %v", h2, err)
	}
	if err := v.UpUnhold(ctx, "d/x.bin", w2, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := v.UpHolder(ctx, "d/x.bin"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after its holder let go: %v, want ErrNotFound", err)
	}
	if err := v.UpUnhold(ctx, "d/x.bin", w2, ""); err != nil {
		t.Fatalf("letting go of a hold that is gone: %v", err)
	}
	// A foreign object where the hold of y.bin would be, and a hold
	// object copied under another name's key: no wark.
	yk := v.holdKey("y.bin")
	bo.Put(ctx, yk, strings.NewReader("junk"), ObjectPut{})
	if h, err := v.UpHolder(ctx, "y.bin"); err != nil || h.Wark != "" || h.ETag == "" {
		t.Fatalf("a foreign object: %+v %v", h, err)
	}
	bo.Put(ctx, yk, bytes.NewReader(EncodeHold(w1, "z.bin")), ObjectPut{})
	if h, err := v.UpHolder(ctx, "y.bin"); err != nil || h.Wark != "" {
		t.Fatalf("another name's hold under y.bin's key: %+v %v", h, err)
	}
	var listed []Hold
	if err := v.UpHolds(ctx, func(h Hold) error { listed = append(listed, h); return nil }); err != nil || len(listed) != 1 {
		t.Fatalf("UpHolds: %+v %v", listed, err)
	}
	if rh, err := v.UpReadHold(ctx, listed[0]); err != nil || rh.Wark != "" || rh.HoldKey() != yk {
		t.Fatalf("UpReadHold of a foreign object: %+v %v", rh, err)
	}
	if err := v.UpDropHold(ctx, listed[0]); err != nil || len(bo.objs) != 0 {
		t.Fatalf("dropping it: %v, left %v", err, bo.objs)
	}
	// Refused: paths that are no file of the volume, and bad warks.
	for _, rel := range []string{"", ".", "../x", "a/../../x", ".hist/x"} {
		if err := v.UpHold(ctx, rel, w1); err == nil {
			t.Errorf("UpHold(%q) took it", rel)
		}
	}
	for _, w := range []string{"", "short", strings.Repeat("A", 43) + "/", strings.Repeat("A", 45), "##" + strings.Repeat("A", 42)} {
		if err := v.UpHold(ctx, "ok.bin", w); err == nil {
			t.Errorf("UpHold with wark %q took it", w)
		}
	}
	if len(bo.objs) != 0 {
		t.Fatalf("refused holds left objects: %v", bo.objs)
	}
	// The store down: an error, nothing held.
	bo.down = true
	if err := v.UpHold(ctx, "x.bin", w1); !errors.Is(err, ErrObjectStoreDown) {
		t.Fatalf("store down: %v", err)
	}
}

// EncodeHold and DecodeHold agree on every wark and path a hold can
// name.
func TestHoldCodecProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for range 2000 {
		w := make([]byte, 44)
		for i := range w {
			w[i] = alpha[rng.IntN(len(alpha))]
		}
		if rng.IntN(4) == 0 {
			w[0] = '#'
		}
		var parts []string
		for range 1 + rng.IntN(4) {
			p := make([]rune, 1+rng.IntN(12))
			for i := range p {
				p[i] = []rune("aZ9 .-_é漢#%")[rng.IntN(11)]
			}
			parts = append(parts, string(p))
		}
		rel := strings.Join(parts, "/")
		if c, err := cleanRel(rel); err != nil || c != rel || rel == "." {
			continue // not a path a hold names
		}
		gw, gr, err := DecodeHold(EncodeHold(string(w), rel))
		if err != nil || gw != string(w) || gr != rel {
			t.Fatalf("round trip of %q %q: %q %q %v", w, rel, gw, gr, err)
		}
	}
}

// FuzzDecodeHold: whatever a bucket holds, DecodeHold never panics, and
// what it accepts is exactly what EncodeHold writes, naming a wark and a
// clean path of the volume.
func FuzzDecodeHold(f *testing.F) {
	f.Add(EncodeHold(strings.Repeat("A", 44), "a/b.bin"))
	f.Add(EncodeHold("#"+strings.Repeat("A", 43), "x"))
	f.Add([]byte("hoard-hold 1\n\n\n"))
	f.Add([]byte("hoard-hold 1\n" + strings.Repeat("A", 44) + "\n../x\n"))
	f.Add([]byte("junk"))
	f.Fuzz(func(t *testing.T, b []byte) {
		w, r, err := DecodeHold(b)
		if err != nil {
			return
		}
		if !bytes.Equal(EncodeHold(w, r), b) {
			t.Fatalf("accepted %q, which EncodeHold writes as %q", b, EncodeHold(w, r))
		}
		if c, err := cleanRel(r); err != nil || c != r || r == "." || !isWark(w) {
			t.Fatalf("accepted wark %q path %q", w, r)
		}
	})
}
