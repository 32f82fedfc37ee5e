package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Lifetimes on object-store volumes (volume flag lifetime=, per upload
// ?life=). On disk an expiry is a record in the state folder; here it
// lives in the bucket, so that any node keeps the promise:
//
//   - The object carries its deadline as metadata (hoard-expires).
//   - Before the object is written, a record is written below the
//     volume's prefix at .hist/life/<deadline in Unix ns, 20 digits>-<random>
//     holding the path; keys sort by deadline, so a sweep lists only the
//     records that are due and stops at the first that is not.
//   - Every node sweeps every objSweepEvery: for a due record, the
//     object at its path is deleted when it still carries that very
//     deadline (a file replaced, appended to or copied over meanwhile
//     carries another, or none, and stays), then the record goes.
//     Deletes are idempotent, so several nodes may sweep at once.
//
// A crash between the record and the object leaves a record whose
// object does not carry its deadline: the sweep drops it. A moved file
// keeps its deadline (a new record at its new path); a copy is a new
// file with none, as on disk. The sweep also deletes bodies of appends
// a crash left staged (objappend.go) once they are a day old.

// lifeArea is where expiry records live, below the volume's prefix.
const lifeArea = HistName + "/life/"

// objSweepEvery is how often a node sweeps the expiry records of its
// object-store volumes; a file outlives its deadline by at most this.
var objSweepEvery = 15 * time.Second

// expiryRec is one expiry record's content.
type expiryRec struct {
	Rel string `json:"rel"` // the file's path in the volume (not a view)
	At  string `json:"at"`  // the deadline, as the object's hoard-expires
}

// objExpire records that the file rel (cleaned, of v or of the view v)
// expires at deadline and adds the deadline to its metadata meta; the
// record is in the bucket before this returns.
func (v *Volume) objExpire(ctx context.Context, rel string, deadline time.Time, meta map[string]string) error {
	o, _ := v.Outer()
	at := deadline.UTC().Format(time.RFC3339Nano)
	rec, _ := json.Marshal(expiryRec{Rel: v.outerRel(rel), At: at})
	var b [8]byte
	rand.Read(b[:])
	key := o.objPre + lifeArea + lifeName(deadline, hex.EncodeToString(b[:]))
	if _, err := o.obj.Put(ctx, key, strings.NewReader(string(rec)), ObjectPut{NoClobber: true, Size: int64(len(rec))}); err != nil {
		return fmt.Errorf("recording the file's lifetime: %w", err)
	}
	meta["hoard-expires"] = at
	if j := v.store.janitor; j != nil {
		j.objDeadline(deadline)
	}
	return nil
}

// objLife adds the lifetime of an upload to rel (life as asked, 0 for
// the volume's) to meta, recording it; nothing when it has none.
func (v *Volume) objLife(ctx context.Context, rel string, life time.Duration, meta map[string]string) error {
	life, err := v.lifeFor(life)
	if err != nil || life <= 0 {
		return err
	}
	return v.objExpire(ctx, rel, v.store.now().Add(life), meta)
}

// objLifeMoved records the deadline a moved object carries (oi, from
// its Stat) at its new path rel of v.
func (v *Volume) objLifeMoved(ctx context.Context, rel string, oi ObjectInfo) error {
	at, ok := oi.Meta["hoard-expires"]
	if !ok {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return nil
	}
	return v.objExpire(ctx, rel, t, map[string]string{})
}

// withoutLife is meta less its deadline: a copy is a new file, which
// does not expire with its original.
func withoutLife(meta map[string]string) map[string]string {
	out := make(map[string]string, len(meta))
	for k, val := range meta {
		if k != "hoard-expires" {
			out[k] = val
		}
	}
	return out
}

// sweepObjects deletes the files of the object-store volume v whose
// deadline passed, and append bodies a crash left staged.
func (v *Volume) sweepObjects(ctx context.Context, now time.Time, j *janitor) error {
	prefix := v.objPre + lifeArea
	var due []ObjectInfo
	err := v.obj.List(ctx, prefix, func(oi ObjectInfo) error {
		if n, ok := lifeDeadline(strings.TrimPrefix(oi.Key, prefix)); ok && n > now.UnixNano() {
			// Sorted by deadline: none after is due. This one is the
			// next (written through any node): sweep then.
			if j != nil {
				j.objDeadline(time.Unix(0, n))
			}
			return errStop
		}
		if len(due) >= 1000 {
			return errStop // the rest at the next sweep
		}
		due = append(due, oi)
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	for _, r := range due {
		if err := v.expireObject(ctx, r, now); err != nil {
			return err
		}
	}
	old := now.Add(-24 * time.Hour)
	var stale []string
	err = v.obj.List(ctx, v.objPre+apndArea, func(oi ObjectInfo) error {
		if !oi.Dir && oi.ModTime.Before(old) {
			stale = append(stale, oi.Key)
		}
		if len(stale) >= 1000 {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	for _, k := range stale {
		if err := v.obj.Delete(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// expireObject carries out the due record r.
func (v *Volume) expireObject(ctx context.Context, r ObjectInfo, now time.Time) error {
	rc, err := v.obj.Open(ctx, r)
	if errors.Is(err, ErrNotFound) {
		return nil // another node took it
	}
	if err != nil {
		return err
	}
	b, err := io.ReadAll(io.LimitReader(rc, 64<<10))
	rc.Close()
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if rec, rel, ok := parseExpiryRec(b); ok {
		oi, err := v.obj.Stat(ctx, v.key(rel))
		switch {
		case err == nil && oi.Meta["hoard-expires"] == rec.At:
			if t, perr := time.Parse(time.RFC3339Nano, rec.At); perr == nil && t.After(now) {
				return nil // not due after all (a clock ahead of the name)
			}
			if err := v.obj.Delete(ctx, oi.Key); err != nil {
				return err
			}
			v.store.log.Info("lifetime ended; deleted", "volume", "/"+v.VPath, "path", rel)
			v.store.emit(Event{Kind: Removed, Vol: v, Rel: rel, At: v.store.now()})
		case err != nil && !errors.Is(err, ErrNotFound):
			return err
		}
	} else {
		v.store.log.Warn("dropping an unreadable expiry record", "volume", "/"+v.VPath, "key", r.Key)
	}
	return v.obj.Delete(ctx, r.Key)
}

// sweepAllObjects sweeps every mounted object-store volume; it stops
// when quit closes.
func (s *Store) sweepAllObjects(j *janitor, quit <-chan struct{}) {
	base, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		select {
		case <-quit:
			stop()
		case <-base.Done():
		}
	}()
	for _, v := range s.mounted() {
		if v.obj == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(base, 5*time.Minute)
		if err := v.sweepObjects(ctx, s.now(), j); err != nil {
			s.log.Warn("sweeping expired files of a volume on object storage failed; again at the next sweep", "volume", "/"+v.VPath, "err", err)
		}
		cancel()
	}
}

// lifeName is the name of an expiry record due at deadline: the deadline
// in Unix nanoseconds, 20 digits (so names sort as deadlines), a dash,
// and tag (random, so records never collide).
func lifeName(deadline time.Time, tag string) string {
	return fmt.Sprintf("%020d-%s", deadline.UnixNano(), tag)
}

// lifeDeadline reads the deadline (Unix ns) from a record's name; ok is
// false for a name lifeName did not make (such a record is due now).
func lifeDeadline(name string) (int64, bool) {
	ns, _, found := strings.Cut(name, "-")
	if !found || len(ns) != 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(ns, 10, 63)
	return int64(n), err == nil
}

// parseExpiryRec reads an expiry record: ok only with a path a request
// could name (cleaned, not the top, not in a state folder) and a deadline.
func parseExpiryRec(b []byte) (rec expiryRec, rel string, ok bool) {
	if json.Unmarshal(b, &rec) != nil || rec.Rel == "" || rec.At == "" {
		return rec, "", false
	}
	rel, err := cleanRel(rec.Rel)
	if err != nil || rel == "." || rel != rec.Rel {
		return rec, "", false
	}
	return rec, rel, true
}
