package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"
)

// rewritingObjects serves the session object with versions: each Stat
// sees the current one, and the first `races` reads find it rewritten
// meanwhile (as a store's If-Match GET does when another node wrote it
// between the two): ErrNotFound from the reader.
type rewritingObjects struct {
	*memObjects
	data  []byte
	races int
}

type seekNopReader struct{ io.Reader }

func (r seekNopReader) Seek(int64, int) (int64, error) { return 0, nil }
func (r seekNopReader) Close() error                   { return nil }

func (o *rewritingObjects) Open(_ context.Context, oi ObjectInfo) (io.ReadSeekCloser, error) {
	if o.races > 0 {
		o.races--
		return seekNopReader{io.MultiReader(bytes.NewReader(o.data[:1]), errReader{fmt.Errorf("%w: %s changed while it was read", ErrNotFound, oi.Key)})}, nil
	}
	return seekNopReader{bytes.NewReader(o.data)}, nil
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// TestUpGetRewritten: a session object rewritten between UpGet's stat and
// its read (two posts of one upload at once, one recording its upload id)
// is read again, never taken for a missing session (which answered the
// other post "unknown wark"); a session that is really gone stays
// ErrNotFound.
func TestUpGetRewritten(t *testing.T) {
	v, mo := memVolume(time.Unix(1_800_000_000, 0))
	ro := &rewritingObjects{memObjects: mo, data: []byte(`{"wark":"w"}`), races: 2}
	v.obj = ro
	if _, err := v.UpPut(context.Background(), "w/session.json", bytes.NewReader(ro.data), int64(len(ro.data)), false); err != nil {
		t.Fatal(err)
	}
	b, _, err := v.UpGet(context.Background(), "w/session.json", 1<<20)
	if err != nil || !bytes.Equal(b, ro.data) {
		t.Fatalf("UpGet of a session rewritten while read: %q, %v", b, err)
	}
	if _, _, err := v.UpGet(context.Background(), "x/session.json", 1<<20); !errors.Is(err, ErrNotFound) {
		t.Fatalf("UpGet of no session: %v, want ErrNotFound", err)
	}
}
