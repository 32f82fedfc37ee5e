package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Names held for up2k sessions of an object-store volume (docs/s3.md,
// "Names held for their sessions"). On disk an unfinished upload's
// work file (or, before it has one, the up2k manager's memory) holds its
// final name, so a second upload of other content to that name is given
// a collision name at its handshake. A bucket has no work file and nodes
// share no memory, so the name is held by an object of its own:
// PREFIX/.hist/up2k-name/<key>, where key is the SHA-256 of the file's
// object key (URL-safe base64: fixed length, whatever the path), written
// with If-None-Match: * so that of two nodes holding one name at once
// exactly one wins. Its body names the upload (its wark) and the path
// (EncodeHold). up2k owns the rules (who may take a hold over, when one
// is stale); these are the object operations.

// holdArea is where the holds live below the volume's prefix.
const holdArea = HistName + "/up2k-name/"

// maxHold bounds a hold object's size (a wark, a path of at most 1024
// bytes, the header).
const maxHold = 2048

// holdHeader begins every hold object.
const holdHeader = "hoard-hold 1\n"

// Hold is the hold of a name: the upload holding it, the path it holds
// (rel in the volume), and the object's version and time (the store's).
type Hold struct {
	Rel, Wark string
	ETag      string
	ModTime   time.Time
	key       string // the hold object's key
}

// EncodeHold is the body of the hold of rel by the upload wark.
func EncodeHold(wark, rel string) []byte {
	return []byte(holdHeader + wark + "\n" + rel + "\n")
}

// DecodeHold parses EncodeHold's output. Anything else — another S3
// client's object, a damaged one — is an error: such an object holds no
// name for a session (up2k treats it as stale).
func DecodeHold(b []byte) (wark, rel string, err error) {
	if len(b) > maxHold {
		return "", "", fmt.Errorf("store: hold of %d bytes, more than %d", len(b), maxHold)
	}
	rest, ok := bytes.CutPrefix(b, []byte(holdHeader))
	if !ok {
		return "", "", errors.New("store: not a hold object")
	}
	w, r, ok := strings.Cut(string(rest), "\n")
	r, nl := strings.CutSuffix(r, "\n")
	if !ok || !nl || strings.Contains(r, "\n") {
		return "", "", errors.New("store: hold object: bad lines")
	}
	if !isWark(w) {
		return "", "", errors.New("store: hold object: bad wark")
	}
	if c, err := cleanRel(r); err != nil || c != r || r == "." || len(r) > 1024 {
		return "", "", errors.New("store: hold object: bad path")
	}
	return w, r, nil
}

// isWark says whether s could be an up2k wark: 44 characters of URL-safe
// base64, or "#" and 43 of them.
func isWark(s string) bool {
	if len(s) == 44 && s[0] == '#' {
		s = "A" + s[1:]
	}
	return isHash(s)
}

// holdKey is the key of the hold of the file r (cleaned) of v.
func (v *Volume) holdKey(r string) string {
	sum := sha256.Sum256([]byte(v.key(r)))
	return v.objPre + holdArea + base64.RawURLEncoding.EncodeToString(sum[:])
}

// holdRel cleans rel for a hold: a file's path, not the top.
func (v *Volume) holdRel(rel string) (string, error) {
	r, err := cleanRel(rel)
	if err != nil || r == "." || v.obj == nil {
		return "", fmt.Errorf("store: hold of %q: %w", rel, ErrBadName)
	}
	return r, nil
}

// UpHold makes the upload wark hold the name rel: ErrExists (wrapped)
// when another hold has it (UpHolder reads that one).
func (v *Volume) UpHold(ctx context.Context, rel, wark string) error {
	r, err := v.holdRel(rel)
	if err != nil {
		return err
	}
	if !isWark(wark) {
		return fmt.Errorf("store: hold of %q: bad wark", rel)
	}
	b := EncodeHold(wark, r)
	_, err = v.obj.Put(ctx, v.holdKey(r), bytes.NewReader(b), ObjectPut{NoClobber: true, Size: int64(len(b))})
	return err
}

// UpHoldOver makes the upload wark hold rel in place of the hold of
// version etag (read with UpHolder; If-Match): ErrExists (wrapped) when
// that hold changed meanwhile, ErrNotFound (wrapped) when it is gone.
func (v *Volume) UpHoldOver(ctx context.Context, rel, wark, etag string) error {
	r, err := v.holdRel(rel)
	if err != nil {
		return err
	}
	if !isWark(wark) || etag == "" {
		return fmt.Errorf("store: hold of %q: bad wark or version", rel)
	}
	b := EncodeHold(wark, r)
	_, err = v.obj.Put(ctx, v.holdKey(r), bytes.NewReader(b), ObjectPut{IfMatch: etag, Size: int64(len(b))})
	return err
}

// UpHolder reads the hold of rel: ErrNotFound (wrapped) when there is
// none. A hold object that is not one (DecodeHold) comes back with Wark
// "" and its version, so the caller may take it over or drop it.
func (v *Volume) UpHolder(ctx context.Context, rel string) (Hold, error) {
	r, err := v.holdRel(rel)
	if err != nil {
		return Hold{}, err
	}
	return v.readHold(ctx, v.holdKey(r), r)
}

// readHold reads the hold object key; want is the path it must name
// ("" for any).
func (v *Volume) readHold(ctx context.Context, key, want string) (Hold, error) {
	for attempt := 0; ; attempt++ {
		h, err := v.readHoldOnce(ctx, key, want)
		if errors.Is(err, errHoldChanged) {
			if attempt < 4 {
				continue // replaced between the stat and the read: once more
			}
			err = ErrObjectStoreDown
		}
		return h, err
	}
}

// errHoldChanged: the hold object changed while it was read.
var errHoldChanged = errors.New("store: hold changed while read")

func (v *Volume) readHoldOnce(ctx context.Context, key, want string) (Hold, error) {
	oi, err := v.obj.Stat(ctx, key)
	if err != nil {
		return Hold{}, err
	}
	h := Hold{ETag: oi.ETag, ModTime: oi.ModTime, Rel: want, key: key}
	if oi.Size > maxHold {
		return h, nil
	}
	rc, err := v.obj.Open(ctx, oi)
	if err != nil {
		return Hold{}, err
	}
	b, err := io.ReadAll(io.LimitReader(rc, maxHold+1))
	rc.Close()
	if errors.Is(err, ErrNotFound) {
		return Hold{}, errHoldChanged
	}
	if err != nil {
		return Hold{}, err
	}
	w, r, err := DecodeHold(b)
	if err != nil || want != "" && r != want || v.holdKey(r) != key {
		return h, nil // not a hold of this name
	}
	h.Wark, h.Rel = w, r
	return h, nil
}

// UpUnhold drops the hold of rel while it is the version etag, or, with
// etag "", while the upload wark holds it; anything else is left alone,
// and a hold that is gone is no error. (S3 has no conditional delete:
// the version is looked at just before the delete.)
func (v *Volume) UpUnhold(ctx context.Context, rel, wark, etag string) error {
	r, err := v.holdRel(rel)
	if err != nil {
		return err
	}
	k := v.holdKey(r)
	h, err := v.readHold(ctx, k, r)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if etag != "" && h.ETag != etag || etag == "" && (wark == "" || h.Wark != wark) {
		return nil
	}
	return v.obj.Delete(ctx, k)
}

// UpHolds calls fn with every hold object of the volume as listed, in
// key order: its version and time, not its body (UpReadHold reads it).
func (v *Volume) UpHolds(ctx context.Context, fn func(Hold) error) error {
	if v.obj == nil {
		return errors.New("store: UpHolds on a volume on disk")
	}
	return v.obj.Walk(ctx, v.objPre+holdArea, func(oi ObjectInfo) error {
		return fn(Hold{ETag: oi.ETag, ModTime: oi.ModTime, key: oi.Key})
	})
}

// HoldKey is the key of a hold from UpHolds, to know it again.
func (h Hold) HoldKey() string { return h.key }

// UpReadHold reads the hold h (from UpHolds): its wark and path, and its
// version now; Wark "" when the object is not a hold. ErrNotFound
// (wrapped) when it is gone.
func (v *Volume) UpReadHold(ctx context.Context, h Hold) (Hold, error) {
	if v.obj == nil || !strings.HasPrefix(h.key, v.objPre+holdArea) {
		return Hold{}, fmt.Errorf("store: hold %q: %w", h.key, ErrOutside)
	}
	return v.readHold(ctx, h.key, "")
}

// UpDropHold drops the hold h (from UpHolds or UpHolder) while it is
// still that version: the version is looked at just before the delete
// (S3 has no conditional delete), so a hold taken over meanwhile stays.
func (v *Volume) UpDropHold(ctx context.Context, h Hold) error {
	if v.obj == nil || !strings.HasPrefix(h.key, v.objPre+holdArea) || h.ETag == "" {
		return fmt.Errorf("store: drop of hold %q: %w", h.key, ErrOutside)
	}
	oi, err := v.obj.Stat(ctx, h.key)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if oi.ETag != h.ETag {
		return nil
	}
	return v.obj.Delete(ctx, h.key)
}
