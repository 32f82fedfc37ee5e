package idx

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"hoard/store"
)

// A volume on object storage (docs/s3.md, "Index and search") is indexed
// as a cache of its bucket: the scan is a listing of every key (with the
// metadata where the store lists it, MinIO), page by page; a file is
// (re)indexed when its size, time or ETag differ from its record. Upload
// facts come from the object's metadata (store.UploadMeta), an up2k
// upload's chunk hashes from the list stored beside it
// (store.ChunkHashes); a file without them (a PUT, another S3 client's
// object) is read once, by ranged GETs, and hashed as a scan hashes a
// file on disk. Tags are not read on such volumes.

// errScanStop ends a bucket listing early (the state folder filled up).
var errScanStop = errors.New("idx: scan stopped")

// hashListAge is how old a chunk-hash list of a content no file has any
// more must be before a complete scan deletes it: an upload may have
// stored it and not yet published its file.
var hashListAge = 24 * time.Hour

// firstRetry is how long after a first scan that could not list the
// bucket it is tried again (without --re-maxage).
var firstRetry = 15 * time.Second

// scanObjects is scanVol for a volume on object storage; vi.scanMu is
// held.
func (x *Indexer) scanObjects(vi *volIdx, first bool) {
	ctx := x.ctx
	start := time.Now()
	log := x.log.With("volume", "/"+vi.v.VPath)
	if err := vi.db.Unavailable(); err != nil {
		log.Warn("not scanning the volume now", "err", err)
		return
	}
	var full atomic.Bool
	log.Info("scanning the volume's bucket")
	vi.prog.begin(start)
	complete := false
	defer func() { vi.prog.end(complete) }()
	watching := make(chan struct{})
	defer close(watching)
	go x.watch(&vi.prog, log, watching)

	seen := map[uint64]struct{}{}
	var wmu sync.Mutex
	warks := map[string]struct{}{} // contents the volume holds: their chunk-hash lists stay
	keep := func(w string) {
		if w != "" {
			wmu.Lock()
			warks[w] = struct{}{}
			wmu.Unlock()
		}
	}
	jobs := make(chan store.ObjectFile, 256)
	var wg sync.WaitGroup
	var nIndexed, failed atomic.Int64
	for range x.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for of := range jobs {
				old, _ := vi.db.Record(of.Rel)
				rec, _, err := x.indexObjectRec(ctx, vi, of.Rel, &of, old, nil, 0)
				if err != nil {
					if errors.As(err, new(*store.StateFullError)) {
						full.Store(true)
					} else if ctx.Err() == nil {
						failed.Add(1)
						log.Warn("could not index a file", "path", of.Rel, "err", err)
					}
					continue
				}
				if rec != nil {
					keep(rec.Wark)
				}
				nIndexed.Add(1)
			}
		}()
	}
	files := 0
	walkErr := vi.v.WalkFiles(ctx, func(of store.ObjectFile) error {
		if full.Load() || vi.db.Unavailable() != nil {
			full.Store(true)
			return errScanStop
		}
		if !indexed(of.Rel) {
			return nil
		}
		files++
		vi.prog.files.Add(1)
		vi.prog.bytes.Add(of.Size)
		if d := x.cfg.ScanDelay; d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
		seen[maphash.String(x.seed, of.Rel)] = struct{}{}
		old, err := vi.db.Record(of.Rel)
		if err == nil && old != nil && sameObject(old, of) &&
			!(vi.tags && old.Tags == nil && x.cfg.ProbeObject != nil && mediaExts[ext(path.Base(of.Rel))] && first) {
			keep(old.Wark)
			return nil
		}
		select {
		case jobs <- of:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	close(jobs)
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	if full.Load() {
		log.Warn("the scan stopped: the state folder is full; the next scan goes on once space is freed", "files", files, "indexed", nIndexed.Load())
		vi.ready.Store(true)
		return
	}
	if walkErr != nil {
		log.Warn("could not list the volume's bucket; the index keeps what it had", "err", walkErr)
		if first && x.cfg.Rescan <= 0 {
			// No rescan would ever come: try again while the store is
			// down (503 meanwhile), without a restart.
			x.wg.Add(1)
			go func() {
				defer x.wg.Done()
				select {
				case <-time.After(firstRetry):
					x.scanVol(vi, true)
				case <-ctx.Done():
				}
			}()
		}
	}
	// Forget what is gone; a record written meanwhile for a file that
	// exists (this node's upload after the listing passed its key) is
	// kept: the object is looked at before its record is dropped.
	var gone []string
	if walkErr == nil {
		vi.db.Rels(func(rel string) error {
			if _, ok := seen[maphash.String(x.seed, rel)]; !ok {
				gone = append(gone, rel)
			}
			return nil
		})
	}
	forgot := 0
	for _, rel := range gone {
		if ctx.Err() != nil {
			return
		}
		if fi, err := vi.v.Stat(rel); err == nil && fi.Mode().IsRegular() || err != nil && store.KindOf(err) == store.KindUnavailable {
			continue
		}
		if err := vi.db.DeleteRecord(rel); err != nil {
			log.Warn("could not forget a file", "path", rel, "err", err)
			continue
		}
		forgot++
	}
	vi.ready.Store(true)
	complete = walkErr == nil
	dropped := 0
	if complete && failed.Load() == 0 {
		var err error
		dropped, err = vi.v.DropChunkHashes(ctx, time.Now().Add(-hashListAge), func(w string) bool {
			_, ok := warks[w]
			return ok
		})
		if err != nil && ctx.Err() == nil {
			log.Warn("could not delete unused chunk-hash lists", "err", err)
		}
	}
	if n := nIndexed.Load(); n >= compactAfter {
		if err := vi.db.compactFiles(ctx); err != nil && ctx.Err() == nil {
			log.Warn("compacting the index after the scan failed", "err", err)
		}
	}
	log.Info("scan done", "files", files, "indexed", nIndexed.Load(), "failed", failed.Load(), "forgotten", forgot, "hash_lists_dropped", dropped, "took", time.Since(start).Round(time.Millisecond))
}

// sameObject reports whether rec describes the object of as listed.
func sameObject(rec *Record, of store.ObjectFile) bool {
	return rec.Size == of.Size && rec.Mtime == of.Mtime.UnixNano() && rec.ETag == of.ETag
}

// indexObject is indexFileNote for a volume on object storage: of is the
// object as a listing saw it (nil: look it up), old its record, e the
// event of this node's upload.
func (x *Indexer) indexObject(ctx context.Context, vi *volIdx, rel string, of *store.ObjectFile, old *Record, e *store.Event, note uint64) (bool, error) {
	_, dropped, err := x.indexObjectRec(ctx, vi, rel, of, old, e, note)
	return dropped, err
}

func (x *Indexer) indexObjectRec(ctx context.Context, vi *volIdx, rel string, of *store.ObjectFile, old *Record, e *store.Event, note uint64) (*Record, bool, error) {
	if of == nil || of.Meta == nil {
		st, err := vi.v.ObjectStat(ctx, rel)
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrIsDir) || errors.Is(err, store.ErrReserved) || errors.Is(err, store.ErrBadName) {
			return nil, false, vi.db.DeleteRecord(rel)
		}
		if err != nil {
			return nil, false, err
		}
		of = &st
	}
	rec := &Record{Rel: of.Rel, Size: of.Size, Mtime: of.Mtime.UnixNano(), ETag: of.ETag}
	u := store.UploadMeta(of.Meta)
	mine := e != nil && e.Kind == store.Created && e.Size == of.Size && e.Mtime.Equal(of.Mtime)
	switch {
	case mine:
		rec.At, rec.Uploader, rec.IP = e.At.Unix(), e.Uploader, e.ClientIP
	case !u.At.IsZero():
		rec.At, rec.Uploader, rec.IP = u.At.Unix(), u.Uploader, u.IP
	case old != nil:
		rec.At, rec.Uploader, rec.IP = old.At, old.Uploader, old.IP
	}
	switch {
	case old != nil && sameObject(old, *of) && old.Wark != "":
		rec.Wark, rec.Chunks, rec.Tags = old.Wark, old.Chunks, old.Tags
	case mine && e.Wark != "" && (len(e.Chunks) > 0 || of.Size == 0):
		rec.Wark, rec.Chunks = e.Wark, e.Chunks // verified on the way in
	case u.Wark != "" && of.Size == 0:
		rec.Wark = u.Wark // an empty file's wark is made of its name and mtime
	default:
		if u.Wark != "" {
			chunks, err := vi.v.ChunkHashes(ctx, u.Wark)
			switch {
			case err == nil && len(chunks) > 0 && x.cfg.WarkOf != nil && x.cfg.WarkOf(of.Size, chunks) == u.Wark:
				rec.Wark, rec.Chunks = u.Wark, chunks
			case err == nil:
				x.log.Debug("a chunk-hash list that does not give the object's wark; hashing the file", "volume", "/"+vi.v.VPath, "path", rel)
			case err != nil && !errors.Is(err, store.ErrNotFound):
				if store.KindOf(err) == store.KindUnavailable || ctx.Err() != nil {
					return nil, false, err
				}
				x.log.Debug("no usable chunk-hash list; hashing the file", "volume", "/"+vi.v.VPath, "path", rel, "err", err)
			}
		}
		if rec.Wark == "" && x.cfg.Hasher != nil {
			if err := x.hashObject(ctx, vi, rec, u); err != nil {
				return nil, false, err
			}
		}
	}
	if vi.tags && rec.Tags == nil && x.cfg.ProbeObject != nil && mediaExts[ext(path.Base(rel))] {
		tags, err := x.probeObject(ctx, vi, rec)
		if err != nil {
			return nil, false, err
		}
		rec.Tags = tags
	}
	if note != 0 {
		err := vi.db.PutRecordDropNote(rec, note)
		return rec, err == nil, err
	}
	return rec, false, vi.db.PutRecord(rec)
}

// probeObject reads the tags of the object of rec (media.ProbeObject: its
// two ends, by ranged GETs, never the whole). A file ffprobe cannot read
// has none, as on disk; a store that cannot be reached is an error, so
// that the next scan tries again.
func (x *Indexer) probeObject(ctx context.Context, vi *volIdx, rec *Record) (map[string]string, error) {
	rc, fi, err := vi.v.OpenObject(ctx, rec.Rel)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if oi, _ := store.ObjectOf(fi); oi.ETag != rec.ETag || fi.Size() != rec.Size {
		return nil, fmt.Errorf("%s changed while it was indexed; the next scan takes it", rec.Rel)
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tags, err := x.cfg.ProbeObject(pctx, rc, rec.Size)
	if err != nil {
		if store.KindOf(err) == store.KindUnavailable || ctx.Err() != nil {
			return nil, err
		}
		x.log.Debug("no tags", "volume", "/"+vi.v.VPath, "path", rec.Rel, "err", err)
	}
	return tags, nil
}

// hashObject reads the object of rec once, by ranged GETs, and sets its
// wark and chunk hashes; the object must still be the one rec describes.
func (x *Indexer) hashObject(ctx context.Context, vi *volIdx, rec *Record, u store.Upload) error {
	rc, fi, err := vi.v.OpenObject(ctx, rec.Rel)
	if err != nil {
		return err
	}
	defer rc.Close()
	if oi, _ := store.ObjectOf(fi); oi.ETag != rec.ETag || fi.Size() != rec.Size {
		return fmt.Errorf("%s changed while it was indexed; the next scan takes it", rec.Rel)
	}
	lmod := u.Lmod
	if lmod == 0 {
		lmod = time.Unix(0, rec.Mtime).Unix()
	}
	dir := path.Dir(rec.Rel)
	if dir == "." {
		dir = ""
	}
	rec.Wark, rec.Chunks, err = x.cfg.Hasher(ctx, store.NewObjectReader(rc), rec.Size, lmod, dir, path.Base(rec.Rel))
	if err != nil {
		return fmt.Errorf("hashing: %w", err)
	}
	return nil
}
