package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The index of an object-store volume (docs/s3.md, "Index and search")
// is a per-node cache of the bucket: idx builds it by a scan (WalkFiles),
// keeps it current from this node's own writes (the events below) and by
// rescans. What only uploads know travels with the object: uploader,
// address, upload time, wark and client mtime as its metadata
// (x-amz-meta-hoard-*, UploadMeta), and an up2k upload's chunk hashes,
// too many for metadata, as a small object in the state area keyed by
// its wark (PutChunkHashes, ChunkHashes).

// ObjectFile is one file of an object-store volume as a bucket scan sees
// it.
type ObjectFile struct {
	Rel   string // path inside the volume
	Size  int64
	Mtime time.Time // the object's LastModified (whole seconds)
	ETag  string
	// Meta is the object's user metadata (lower-case keys without
	// x-amz-meta-), nil when the listing does not carry it (only MinIO's
	// does): then ask ObjectMeta for it.
	Meta map[string]string
}

// MetaWalker is an ObjectStore that can list objects with their user
// metadata (MinIO's ListObjectsV2 extension, metadata=true); an object
// whose metadata the listing did not carry has Meta nil.
type MetaWalker interface {
	WalkMeta(ctx context.Context, prefix string, fn func(ObjectInfo) error) error
}

// WalkFiles calls fn with every file of the object-store volume, at any
// depth, in key order, page by page (memory stays flat whatever the
// bucket holds). Keys no request path can reach are left out: the state
// area (.hist at any depth), folder markers, names that break the
// volume's name rules, work files.
func (v *Volume) WalkFiles(ctx context.Context, fn func(ObjectFile) error) error {
	if v.obj == nil {
		return errors.New("store: WalkFiles on a volume on disk")
	}
	walk := v.obj.Walk
	if mw, ok := v.obj.(MetaWalker); ok {
		walk = mw.WalkMeta
	}
	return walk(ctx, v.objPre, func(oi ObjectInfo) error {
		rel, ok := v.relOfKey(oi.Key)
		if !ok || oi.Dir {
			return nil
		}
		return fn(ObjectFile{Rel: rel, Size: oi.Size, Mtime: oi.ModTime, ETag: oi.ETag, Meta: oi.Meta})
	})
}

// relOfKey is the volume path of an object key, when a request could
// reach it.
func (v *Volume) relOfKey(key string) (string, bool) {
	if !strings.HasPrefix(key, v.objPre) || strings.HasSuffix(key, "/") {
		return "", false
	}
	rel := key[len(v.objPre):]
	if r, err := cleanRel(rel); err != nil || r != rel || r == "." {
		return "", false
	}
	return rel, true
}

// ObjectStat describes the file rel of an object-store volume with its
// metadata (a HEAD): ErrNotFound when there is none, ErrIsDir for a
// folder.
func (v *Volume) ObjectStat(ctx context.Context, rel string) (ObjectFile, error) {
	oi, err := v.UpStat(ctx, rel)
	if err != nil {
		return ObjectFile{}, err
	}
	r, _ := cleanRel(rel)
	return ObjectFile{Rel: r, Size: oi.Size, Mtime: oi.ModTime, ETag: oi.ETag, Meta: oi.Meta}, nil
}

// Upload is what an object's metadata says of its upload.
type Upload struct {
	At       time.Time // zero when unknown
	Uploader string
	IP       string
	Wark     string // up2k's identity of the content; "" unless up2k wrote it
	Lmod     int64  // the client's mtime (Unix seconds), 0 when not given
}

// UploadMeta reads the upload facts hoard wrote as object metadata
// (ingestObject, UpCompose). The metadata may have been written by any S3
// client: what does not parse, or could not have come from hoard, is
// left out rather than trusted.
func UploadMeta(meta map[string]string) Upload {
	var u Upload
	if t, err := time.Parse(time.RFC3339Nano, meta["hoard-at"]); err == nil && t.Year() >= 1970 && t.Year() < 10000 {
		u.At = t
	}
	if s := meta["hoard-uploader"]; len(s) <= 256 && printable(s) {
		u.Uploader = s
	}
	if s := meta["hoard-ip"]; len(s) <= 64 && strings.Trim(s, "0123456789abcdefABCDEF.:[]%") == "" {
		u.IP = s
	}
	if w := meta["hoard-wark"]; isHash(w) {
		u.Wark = w
	}
	if l, err := strconv.ParseInt(meta["hoard-lmod"], 10, 64); err == nil && l > 0 {
		u.Lmod = l
	}
	return u
}

// printable: valid UTF-8 without control characters (an account name).
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// isHash reports whether s is a 44-character up2k hash (URL-safe base64).
func isHash(s string) bool {
	if len(s) != 44 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// hashArea is where chunk-hash lists live below the volume's prefix.
const hashArea = HistName + "/hashes/"

// maxHashList bounds a chunk-hash list object: up2k's largest file has
// at most 4096 chunks (ChunkSize), 45 bytes each.
const maxHashList = 4096 * 45

// PutChunkHashes stores the chunk hashes of the content wark (an up2k
// upload's, before it is published), so that other nodes index them
// without reading the file. Content-addressed: every upload of the same
// content writes the same bytes.
func (v *Volume) PutChunkHashes(ctx context.Context, wark string, chunks []string) error {
	if v.obj == nil || !isHash(wark) {
		return fmt.Errorf("store: chunk hashes of %q: bad wark", wark)
	}
	b := EncodeChunkHashes(chunks)
	_, err := v.obj.Put(ctx, v.objPre+hashArea+wark, bytes.NewReader(b), ObjectPut{Size: int64(len(b))})
	return err
}

// ChunkHashes reads the chunk hashes stored for wark: ErrNotFound
// (wrapped) when there are none.
func (v *Volume) ChunkHashes(ctx context.Context, wark string) ([]string, error) {
	if v.obj == nil || !isHash(wark) {
		return nil, fmt.Errorf("store: chunk hashes of %q: bad wark", wark)
	}
	key := v.objPre + hashArea + wark
	oi, err := v.obj.Stat(ctx, key)
	if err != nil {
		return nil, err
	}
	if oi.Size > maxHashList {
		return nil, fmt.Errorf("store: chunk hash list %s: %d bytes, too long", wark, oi.Size)
	}
	rc, err := v.obj.Open(ctx, oi)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxHashList+1))
	if err != nil {
		return nil, err
	}
	return DecodeChunkHashes(b)
}

// DropChunkHashes deletes the chunk-hash lists older than before whose
// wark keep does not know (no file of the volume has that content any
// more); it returns how many it deleted.
func (v *Volume) DropChunkHashes(ctx context.Context, before time.Time, keep func(wark string) bool) (int, error) {
	if v.obj == nil {
		return 0, nil
	}
	base := v.objPre + hashArea
	return v.sweepKeys(ctx, base, func(oi ObjectInfo) bool {
		w := strings.TrimPrefix(oi.Key, base)
		return isHash(w) && !keep(w) && oi.ModTime.Before(before)
	})
}

// sweepKeys deletes the keys under prefix that drop picks (decided over
// the whole listing first, then deleted one by one until an error); it
// returns how many it deleted.
func (v *Volume) sweepKeys(ctx context.Context, prefix string, drop func(ObjectInfo) bool) (int, error) {
	var old []string
	err := v.obj.Walk(ctx, prefix, func(oi ObjectInfo) error {
		if drop(oi) {
			old = append(old, oi.Key)
		}
		return nil
	})
	n := 0
	for _, k := range old {
		if err != nil {
			break
		}
		if err = v.obj.Delete(ctx, k); err == nil {
			n++
		}
	}
	return n, err
}

// EncodeChunkHashes is a chunk-hash list object: one hash per line.
func EncodeChunkHashes(chunks []string) []byte {
	var b bytes.Buffer
	for _, c := range chunks {
		b.WriteString(c)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// DecodeChunkHashes parses EncodeChunkHashes's output: each line a
// 44-character hash, at most 4096 of them.
func DecodeChunkHashes(b []byte) ([]string, error) {
	if len(b) > maxHashList {
		return nil, errors.New("store: chunk hash list too long")
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if !isHash(sc.Text()) {
			return nil, errors.New("store: chunk hash list: a line is not a chunk hash")
		}
		out = append(out, sc.Text())
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		return nil, errors.New("store: chunk hash list: cut short")
	}
	return out, sc.Err()
}

// objCreated tells the index of a file published on an object-store
// volume (ingestObject, UpCompose): up2k's wark and chunks when known.
func (v *Volume) objCreated(rel string, oi ObjectInfo, at time.Time, user, ip, wark string, chunks []string) {
	v.store.emit(Event{Kind: Created, Vol: v, Rel: rel, Size: oi.Size, Mtime: oi.ModTime, At: at, Uploader: user, ClientIP: ip, Wark: wark, Chunks: chunks})
}

// objRemoved tells the index of a file or (tree) folder deleted from an
// object-store volume.
func (v *Volume) objRemoved(who Actor, rel string, tree bool) {
	v.store.emit(Event{Kind: Removed, Tree: tree, Vol: v, Rel: rel, At: v.store.now(), Uploader: who.User, ClientIP: who.IP})
}
