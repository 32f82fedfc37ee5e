package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"
)

// Where an up2k content (a wark) lies in an object-store volume, for
// every node (docs/s3.md, "Identical content elsewhere"): the empty
// object PREFIX/.hist/where/<wark>/<rel> says that the file rel was
// published with that content. It is written before the file (an up2k
// publish, a server-side copy of it, a move or copy of an object whose
// metadata names a wark), so a file with a wark in its metadata always
// has its record; a record whose file went or changed is a hint that the
// lookup checks against the object's own metadata (hoard-wark) and drops.
// A node's index is a cache that lags the bucket by a rescan; these
// records do not lag, so nodupe and dedup hold across nodes at once.

// whereArea is where the records live below the volume's prefix.
const whereArea = HistName + "/where/"

// MaxObjectKey is S3's longest object key, in bytes.
const MaxObjectKey = 1024

// whereKey is the record of rel holding wark; ok is false when the wark
// is not one or the key would be too long for S3 (such a file is not
// found by its content: it is uploaded again, never refused).
func (v *Volume) whereKey(wark, rel string) (string, bool) {
	if !isHash(wark) {
		return "", false
	}
	k := v.objPre + whereArea + wark + "/" + rel
	return k, len(k) <= MaxObjectKey
}

// objWhere records that the file rel (cleaned) of the object-store
// volume is about to hold the content named by meta's hoard-wark (none:
// nothing to record). An error is the store's: the caller stops before
// it writes the file.
func (v *Volume) objWhere(ctx context.Context, rel string, meta map[string]string) error {
	o, _ := v.Outer() // a share's uploads are the volume's files: one area
	k, ok := o.whereKey(meta["hoard-wark"], v.outerRel(rel))
	if !ok || o.obj == nil {
		return nil
	}
	_, err := o.obj.Put(ctx, k, strings.NewReader(""), ObjectPut{Size: 0})
	return err
}

// viewRel is the path in the view v of the path orel of its outer volume;
// ok is false when the view cannot reach it.
func (v *Volume) viewRel(orel string) (string, bool) {
	_, base := v.Outer()
	r := orel
	if base != "" && base != "." {
		var ok bool
		if r, ok = strings.CutPrefix(orel, base+"/"); !ok {
			return "", false
		}
	}
	return r, v.objInView(r)
}

// whereGrace is how old a record must be before a lookup that finds no
// such file drops it: records are written before their file, and a
// publish (a join of up to 4096 chunk objects) may take a while.
const whereGrace = 24 * time.Hour

// maxWhere bounds the records one lookup reads: the same content at more
// paths than that is found at the first ones.
const maxWhere = 64

// UpWhere returns the files of the object-store volume that hold the
// content wark, each with its object (checked: its metadata names wark),
// in path order, at most maxWhere records looked at. A record whose file
// is gone or holds other content is deleted on the way.
func (v *Volume) UpWhere(ctx context.Context, wark string) ([]ObjectInfo, []string, error) {
	if v.obj == nil {
		return nil, nil, errors.New("store: UpWhere on a volume on disk")
	}
	if !isHash(wark) {
		return nil, nil, nil
	}
	// The records are the volume's; a share (a view) sees those of the
	// files it reaches, by its own paths.
	o, _ := v.Outer()
	base := o.objPre + whereArea + wark + "/"
	var rels []string
	old := map[string]bool{}
	cut := v.store.now().Add(-whereGrace)
	err := o.obj.Walk(ctx, base, func(oi ObjectInfo) error {
		orel := strings.TrimPrefix(oi.Key, base)
		if r, err := cleanRel(orel); err != nil || r != orel || r == "." {
			return nil // not hoard's
		}
		rel, ok := v.viewRel(orel)
		if !ok || rel == "" {
			return nil
		}
		rels = append(rels, rel)
		old[rel] = oi.ModTime.Before(cut)
		if len(rels) >= maxWhere {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, nil, err
	}
	var ois []ObjectInfo
	var out []string
	for _, rel := range rels {
		oi, err := v.obj.Stat(ctx, v.key(rel))
		switch {
		case err == nil && oi.Meta["hoard-wark"] == wark && !strings.HasSuffix(oi.Key, "/"):
			ois = append(ois, oi)
			out = append(out, rel)
		case (err == nil || errors.Is(err, ErrNotFound)) && old[rel]:
			// Gone, or other content now: forget it (best effort; the
			// next lookup tries again). A young record may be of a
			// publish under way on another node: it stays.
			o.obj.Delete(context.WithoutCancel(ctx), base+v.outerRel(rel))
		case err == nil || errors.Is(err, ErrNotFound):
		default:
			return nil, nil, err
		}
	}
	return ois, out, nil
}

// ErrChanged: the object changed while it was being rewritten; nothing
// was written (try again).
var ErrChanged = &Error{Kind: KindUnavailable, Msg: "the file changed meanwhile; nothing was changed, try again", RetryAfter: time.Second}

// UpTouch sets the client mtime (hoard-lmod) of the file rel of an
// object-store volume, whose object is oi (from UpWhere or UpStat): an
// up2k handshake with umod (--touch) for content already there. S3 has
// no metadata update in place: the object is copied onto itself,
// server-side, with the new metadata (any size, no byte through hoard),
// completed only while it is still the version oi (If-Match), so a file
// replaced meanwhile is never overwritten by its old bytes: ErrChanged.
// The copy is a new version: its ETag, and so its file key, changes.
func (v *Volume) UpTouch(ctx context.Context, rel string, oi ObjectInfo, lmod int64) (ObjectInfo, error) {
	r, err := cleanRel(rel)
	if err != nil || r == "." || v.obj == nil || oi.Key != v.key(r) || oi.ETag == "" {
		return ObjectInfo{}, fmt.Errorf("store: touch of %q: %w", rel, ErrBadName)
	}
	meta := maps.Clone(oi.Meta)
	if meta == nil {
		meta = map[string]string{}
	}
	meta["hoard-lmod"] = strconv.FormatInt(lmod, 10)
	noi, err := v.obj.Copy(ctx, oi.Key, v.obj, oi, ObjectPut{IfMatch: oi.ETag, Meta: meta})
	if errors.Is(err, ErrExists) || errors.Is(err, ErrNotFound) {
		return ObjectInfo{}, fmt.Errorf("%w (%s)", ErrChanged, err)
	}
	if err != nil {
		return ObjectInfo{}, err
	}
	u := UploadMeta(noi.Meta)
	v.objCreated(r, noi, u.At, u.Uploader, u.IP, u.Wark, nil) // objidx.go: the index follows
	v.store.log.Info("touched", "volume", "/"+v.VPath, "key", noi.Key, "lmod", lmod)
	return noi, nil
}
