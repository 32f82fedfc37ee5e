package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"time"
)

// The secret file keys (flag fk) derive from, on a volume on object
// storage. Every node must give a file the same key, so the secret lives
// in the bucket, not in a node's state folder: the object
// PREFIX/.hist/secret (64 hex digits), written once with If-None-Match: *
// by whichever node needs it first (two at once: one wins, the other
// reads the winner's). No request path reaches .hist. A key then derives
// from the path, the size and the object's ETag (what every node sees
// alike; the ETag plays the inode's part: a file replaced, even by the
// same bytes in a new upload, gets a new key as on disk).
type objSecret struct {
	name string // its key in the bucket

	mu    sync.Mutex
	key   []byte
	tried time.Time // the last failed load: the next waits objSecretRetry
	err   error
}

// objSecretRetry is how long a failed load (the store down) is
// remembered: a listing of many files asks once, not once per file.
const objSecretRetry = 2 * time.Second

// get returns the secret, loading (or creating) it at the first call.
func (s *objSecret) get(o ObjectStore) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != nil {
		return s.key, nil
	}
	if !s.tried.IsZero() && time.Since(s.tried) < objSecretRetry {
		return nil, s.err
	}
	ctx, cancel := objCtx()
	defer cancel()
	k, err := s.load(ctx, o)
	if err != nil {
		s.tried, s.err = time.Now(), err
		return nil, err
	}
	s.key = k
	return k, nil
}

func (s *objSecret) load(ctx context.Context, o ObjectStore) ([]byte, error) {
	for range 3 {
		k, err := s.read(ctx, o)
		if !errors.Is(err, ErrNotFound) {
			return k, err
		}
		k = make([]byte, 32)
		rand.Read(k)
		enc := hex.EncodeToString(k)
		_, err = o.Put(ctx, s.name, strings.NewReader(enc), ObjectPut{NoClobber: true, Size: int64(len(enc))})
		if err == nil {
			return k, nil
		}
		if !errors.Is(err, ErrExists) {
			return nil, err
		}
		// Another node wrote it first: read theirs.
	}
	return nil, errors.New("store: the volume's secret in the bucket keeps changing")
}

// read reads the secret object: ErrNotFound when there is none.
func (s *objSecret) read(ctx context.Context, o ObjectStore) ([]byte, error) {
	oi, err := o.Stat(ctx, s.name)
	if err != nil {
		return nil, err
	}
	if oi.Size != 64 {
		return nil, fmt.Errorf("store: the volume's secret %s has %d bytes, not 64", s.name, oi.Size)
	}
	r, err := o.Open(ctx, oi)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b := make([]byte, 64)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	k := make([]byte, 32)
	if _, err := hex.Decode(k, b); err != nil {
		return nil, fmt.Errorf("store: the volume's secret %s is not hex", s.name)
	}
	return k, nil
}

// fileKeyOf is FileKey's digest input for fi, and the secret to key it
// with: on object storage the bucket's secret and the object's ETag,
// else the volume's secret and the inode. ok is false when the bucket's
// secret cannot be read (the store down): no key then.
func (v *Volume) fileKeyOf(rel string, fi fs.FileInfo) (secret []byte, msg string, ok bool) {
	if oi, isObj := fi.Sys().(ObjectInfo); isObj && v.objSec != nil {
		k, err := v.objSec.get(v.obj)
		if err != nil {
			v.store.log.Warn("no file keys now: the volume's secret cannot be read from the object store", "volume", "/"+v.VPath, "err", err)
			return nil, "", false
		}
		return k, fmt.Sprintf("fk\x00%s\x00%d\x00s3:%s", rel, fi.Size(), oi.ETag), true
	}
	_, ino, _ := FileID(fi)
	return v.secret, fmt.Sprintf("fk\x00%s\x00%d\x00%d", rel, fi.Size(), ino), true
}
