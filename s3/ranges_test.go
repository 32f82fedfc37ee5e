package s3

import (
	"testing"

	"hoard/store"
)

// copyRanges covers an object exactly, in order, each range at most
// 5 GiB and every one but the last at least S3's 5 MiB minimum part.
func FuzzCopyRanges(f *testing.F) {
	for _, n := range []int64{0, 1, 5 << 20, maxCopyPart - 1, maxCopyPart, maxCopyPart + 1, 2*maxCopyPart + 1<<20, 5 << 40} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, size int64) {
		if size < 0 || size > 5<<40 { // S3's largest object: 5 TiB
			t.Skip()
		}
		rs := copyRanges(size)
		if len(rs) > 10_000 {
			t.Fatalf("%d ranges: more parts than S3 takes", len(rs))
		}
		next := int64(0)
		for i, r := range rs {
			if r[0] != next || r[1] > maxCopyPart || r[1] < 0 {
				t.Fatalf("size %d: range %d is %v after %d", size, i, r, next)
			}
			if i < len(rs)-1 && r[1] < minPart {
				t.Fatalf("size %d: range %d of %d bytes below the minimum part", size, i, r[1])
			}
			next += r[1]
		}
		if next != size || size == 0 && (len(rs) != 1 || rs[0] != [2]int64{0, 0}) {
			t.Fatalf("size %d: ranges %v cover %d", size, rs, next)
		}
	})
}

type wrapped struct{ store.ObjectStore }

func (w wrapped) Unwrap() store.ObjectStore { return w.ObjectStore }

// Copy's source bucket is found through wrappers, and only a bucket is.
func TestBucketOf(t *testing.T) {
	b := &Bucket{bucket: "x"}
	if got, ok := bucketOf(wrapped{wrapped{b}}); !ok || got != b {
		t.Errorf("through two wrappers: %v %v", got, ok)
	}
	if _, ok := bucketOf(wrapped{nil}); ok {
		t.Error("a wrapper of nothing taken for a bucket")
	}
	if _, ok := bucketOf(nil); ok {
		t.Error("nil taken for a bucket")
	}
}
