package idx

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"hoard/store"
)

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestIndexStopsHashingDeleted: an upload deleted while the indexer hashes
// it is not read to its end (a 1 GiB PUT removed just after it landed cost
// a CPU-second of hashing, taken from the next upload: issue 19), and no
// record is left for it.
func TestIndexStopsHashingDeleted(t *testing.T) {
	f := newManageFixture(t, false)
	const size = 96 << 20
	var read, calls atomic.Int64
	var herr atomic.Value
	f.x.cfg.Hasher = func(ctx context.Context, file io.ReaderAt, n, lmod int64, folder, name string) (string, []string, error) {
		calls.Add(1)
		buf := make([]byte, 1<<20)
		for off := int64(0); off < n; off += int64(len(buf)) {
			if off == 1<<20 {
				// The client deletes the file behind hoard's back.
				if err := os.Remove(filepath.Join(f.dirs[""], "big.bin")); err != nil {
					return "", nil, err
				}
			}
			k, err := file.ReadAt(buf[:min(int64(len(buf)), n-off)], off)
			read.Add(int64(k))
			if err != nil {
				herr.Store(err)
				return "", nil, err
			}
		}
		return "w", []string{"w"}, nil
	}
	f.x.Start()
	t.Cleanup(f.x.Close)
	_, err := f.vols[""].Ingest(context.Background(), "", io.LimitReader(zeros{}, size), store.IngestOptions{Name: "big.bin", Size: size})
	if err != nil {
		t.Fatal(err)
	}
	f.settle(t)
	if calls.Load() != 1 {
		t.Fatalf("hashed %d times, want once", calls.Load())
	}
	if got := read.Load(); got >= size/2 {
		t.Errorf("read %d of %d bytes of a file deleted after its first MiB; want the hashing stopped within %d", got, size, goneEvery)
	}
	if e, _ := herr.Load().(error); !errors.Is(e, errGone) {
		t.Errorf("the hasher's read failed with %v, want errGone", e)
	}
	if rec := f.record(t, "", "big.bin"); rec != nil {
		t.Errorf("a record for the deleted file: %+v", rec)
	}
}
