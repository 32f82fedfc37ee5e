package up2k

// Runs of chunks straight into the file's multipart upload (docs/s3.md,
// "up2k on S3", "Parts"). S3 joins parts of at least 5 MiB (but the
// last), and up2k's chunks of files up to 1 GiB are 1–4 MiB, so the
// file is cut into groups of G consecutive chunks, G·cs ≥ 5 MiB; part
// g+1 of the session's upload always begins at group g. A post of a run
// of consecutive chunks streams its whole groups as ONE part (each chunk
// hashed on the way, the part's last bytes held back until every hash
// matched: a part exists only when verified, as a chunk object does),
// and its leading and trailing chunks outside whole groups are staged as
// chunk objects. The finishing node completes the upload with the parts
// and, for each group no part covers, a part composed of its staged
// chunks. Each byte of a stitched post is written to the store once.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"hoard/store"
)

// minPart is S3's smallest part but the last.
const minPart = 5 << 20

// maxPart is S3's largest part: a longer run is staged.
const maxPart = 5 << 30

// groupSize is G, the chunks of one group.
func (t *table) groupSize() int { return int((minPart + t.cs - 1) / t.cs) }

// groups is the number of groups.
func (t *table) groups() int { g := t.groupSize(); return (t.n + g - 1) / g }

// groupEnd is the chunk after group g (t.n for the last).
func (t *table) groupEnd(g int) int { return min((g+1)*t.groupSize(), t.n) }

// remoteState is what the bucket holds of a session: staged chunk
// objects (by key) and the parts of its upload that begin and end at
// group boundaries (by number).
type remoteState struct {
	staged map[string]bool
	parts  map[int]store.ObjectPart
	last   time.Time
}

// loadState lists the session's chunk objects and its upload's parts.
// An upload that is gone (aborted by an expiry, or completed) has none.
func loadState(ctx context.Context, v *store.Volume, rs *remoteSess) (remoteState, error) {
	have, last, err := remoteHave(ctx, v, rs.rec.Wark)
	if err != nil {
		return remoteState{}, err
	}
	st := remoteState{staged: have, parts: map[int]store.ObjectPart{}, last: last}
	if rs.rec.Upload == "" {
		return st, nil
	}
	ps, err := v.UpParts(ctx, path.Join(rs.rec.Dir, rs.rec.Name), rs.rec.Upload)
	if errors.Is(err, store.ErrNotFound) {
		return st, nil
	}
	if err != nil {
		return remoteState{}, err
	}
	t := rs.t
	unit := int64(t.groupSize()) * t.cs
	for _, p := range ps {
		g := p.Number - 1
		if g < 0 || g >= t.groups() || p.Size <= 0 {
			continue
		}
		end := int64(g)*unit + p.Size
		if end != t.size && (end > t.size || end%unit != 0) {
			continue // not a run of whole groups: not hoard's
		}
		st.parts[p.Number] = p
		if p.ModTime.After(st.last) {
			st.last = p.ModTime
		}
	}
	return st, nil
}

// partEnd is the group after the groups part p covers.
func (st remoteState) partEnd(t *table, p store.ObjectPart) int {
	unit := int64(t.groupSize()) * t.cs
	end := int64(p.Number-1)*unit + p.Size
	if end >= t.size {
		return t.groups()
	}
	return int(end / unit)
}

// groupStaged reports whether every chunk of group g is staged.
func (st remoteState) groupStaged(t *table, g int) bool {
	for i := g * t.groupSize(); i < t.groupEnd(g); i++ {
		if !st.staged[t.keyOfChunk(i)] {
			return false
		}
	}
	return true
}

// walk is how the file is made, from its start: at each group, the part
// that begins there when there is one (it runs to a later group), else
// the group's staged chunks. Every node walks the same way, so the
// chunks it asks for are those this walk lacks: a part that the walk
// steps over (it overlaps one taken before, from two posts of one run
// stitched differently at once) is not used, and its chunks are asked
// again. fn gets each step: the part, or the group g with p.Number 0.
func (st remoteState) walk(t *table, fn func(g int, p store.ObjectPart)) {
	for g := 0; g < t.groups(); {
		if p, ok := st.parts[g+1]; ok {
			fn(g, p)
			g = st.partEnd(t, p)
			continue
		}
		fn(g, store.ObjectPart{})
		g++
	}
}

// had is, per unique chunk key, whether the bucket holds it where the
// walk can use it: staged, or inside a part the walk takes (at all of
// its places, for a chunk that repeats). When every chunk is had, plan
// succeeds.
func (st remoteState) had(t *table) map[string]bool {
	cover := make([]bool, t.n)
	st.walk(t, func(g int, p store.ObjectPart) {
		if p.Number == 0 {
			return
		}
		for i := g * t.groupSize(); i < min(st.partEnd(t, p)*t.groupSize(), t.n); i++ {
			cover[i] = true
		}
	})
	out := map[string]bool{}
	for u := 0; u < t.nu; u++ {
		k := t.key(u)
		ok := st.staged[k] || cover[t.firstChunk(u)]
		for _, c := range t.copies(u) {
			ok = ok && (st.staged[k] || cover[c])
		}
		if ok {
			out[k] = true
		}
	}
	return out
}

// plan is the walk as the parts of the file; ok is false when a group
// the walk needs is not all staged.
func (st remoteState) plan(t *table, wark string) ([]store.UpSlot, bool) {
	var slots []store.UpSlot
	ok := true
	st.walk(t, func(g int, p store.ObjectPart) {
		if p.Number != 0 {
			slots = append(slots, store.UpSlot{Part: p})
			return
		}
		if !st.groupStaged(t, g) {
			ok = false
			return
		}
		first := g * t.groupSize()
		var srcs []string
		for i := first; i < t.groupEnd(g); i++ {
			srcs = append(srcs, chunkObject(wark, t.keyOfChunk(i)))
		}
		slots = append(slots, store.UpSlot{Number: g + 1, Srcs: srcs, Check: func(j int, r io.Reader) io.Reader {
			u, _ := t.lookup(t.keyOfChunk(first + j))
			return newCheckReader(r, t.length(u), t.sentOf(u), t.cmp(u))
		}})
	})
	return slots, ok
}

// postPlan splits a post of unique chunks us into the chunks staged
// before its part, the part's chunks (first group a, groups [a, b)),
// and the chunks staged after. direct is false when the post has no
// whole group, or is not a run of consecutive chunks that each occur
// once in the file (a chunk that repeats is staged: the file needs its
// bytes at each place, and a part cannot be read back).
func (t *table) postPlan(us []int) (lead, mid, tail []int, a int, direct bool) {
	c0 := t.firstChunk(us[0])
	for k, u := range us {
		if t.firstChunk(u) != c0+k || len(t.copies(u)) > 0 {
			return us, nil, nil, 0, false
		}
	}
	gs := t.groupSize()
	end := c0 + len(us)
	a = (c0 + gs - 1) / gs
	b := end / gs
	if end == t.n {
		b = t.groups()
	}
	if a >= b {
		return us, nil, nil, 0, false
	}
	from, to := a*gs, min(b*gs, t.n)
	if int64(to-from)*t.cs > maxPart {
		return us, nil, nil, 0, false
	}
	return us[:from-c0], us[from-c0 : to-c0], us[to-c0:], a, true
}

// remoteUpload returns the id of the session's upload, beginning it (and
// recording it in the session object, If-Match, so that two nodes agree
// on one) when there is none, and the session as it is now. "" when the
// upload is staged instead.
func (m *Manager) remoteUpload(ctx context.Context, v *store.Volume, rs *remoteSess) (string, *remoteSess, error) {
	if rs.rec.Upload != "" {
		return rs.rec.Upload, rs, nil
	}
	for range 4 {
		fresh, etag, ok, err := m.loadRemoteTag(ctx, v, rs.rec.Wark)
		if err != nil {
			return "", rs, err
		}
		if !ok || fresh.rec.Final != "" {
			return "", rs, invalidf("unknown wark (see serverlog for details)")
		}
		if fresh.rec.Upload != "" {
			m.remote.put(v, rs.rec.Wark, fresh)
			return fresh.rec.Upload, fresh, nil
		}
		rec := fresh.rec
		rel := path.Join(rec.Dir, rec.Name)
		id, err := v.UpBegin(ctx, rel, store.UpPublish{User: rec.User, IP: rec.IP, Life: time.Duration(rec.Life) * time.Second, Meta: publishMeta(rec.Wark, rec.Lmod)})
		if errors.Is(err, store.ErrNoDirect) {
			return "", rs, nil
		}
		if err != nil {
			return "", rs, err
		}
		rec.Upload = id
		err = putRemoteIf(ctx, v, rec, etag)
		if errors.Is(err, store.ErrExists) {
			v.UpAbortUpload(context.WithoutCancel(ctx), rel, id) // another node recorded its own first
			continue
		}
		if err != nil {
			v.UpAbortUpload(context.WithoutCancel(ctx), rel, id)
			return "", rs, err
		}
		fresh.rec = rec
		m.remote.put(v, rec.Wark, fresh)
		return id, fresh, nil
	}
	return "", rs, &Error{Kind: Unavailable, Msg: "the upload changed under this post several times; try again", RetryAfter: time.Second}
}

// remotePost stores the chunks us of a post: chunks outside whole groups
// as chunk objects, the rest as one part of the session's upload. It
// returns the session as it is now (with its upload's id).
func (m *Manager) remotePost(ctx context.Context, p ChunkPost, rs *remoteSess, us []int) (Written, *remoteSess, error) {
	v, t := p.Vol, rs.t
	var w Written
	stage := func(list []int) error {
		for _, u := range list {
			n := t.length(u)
			cr := newCheckReader(p.Body, n, t.sentOf(u), t.cmp(u))
			_, err := v.UpPut(ctx, chunkObject(p.Wark, t.key(u)), cr, n, false)
			got, bad, crErr := cr.result()
			w.Bytes += got
			if crErr != nil { // the body's own fault wins: the put was aborted for it
				if bad {
					m.badChunks.Add(1)
				}
				return crErr
			}
			if err != nil {
				return err
			}
			w.Chunks++
		}
		return nil
	}
	lead, mid, tail, a, direct := t.postPlan(us)
	id := ""
	if direct {
		var err error
		if id, rs, err = m.remoteUpload(ctx, v, rs); err != nil {
			return w, rs, err
		}
		if id == "" {
			lead, mid, tail = us, nil, nil
		}
	}
	if err := stage(lead); err != nil {
		return w, rs, err
	}
	if len(mid) > 0 {
		crs := make([]*checkReader, len(mid))
		rds := make([]io.Reader, len(mid))
		var size int64
		for k, u := range mid {
			n := t.length(u)
			crs[k] = newCheckReader(p.Body, n, t.sentOf(u), t.cmp(u))
			rds[k] = crs[k]
			size += n
		}
		_, err := v.UpPart(ctx, path.Join(rs.rec.Dir, rs.rec.Name), id, a+1, io.MultiReader(rds...), size)
		for _, cr := range crs {
			got, bad, crErr := cr.result()
			w.Bytes += got
			if crErr != nil {
				if bad {
					m.badChunks.Add(1)
				}
				return w, rs, crErr
			}
		}
		if errors.Is(err, store.ErrNotFound) {
			// The upload is gone (the session expired, or was restaged
			// by a publish that found its name taken): forget it, so
			// that the next post begins another, and ask again.
			m.forgetUpload(context.WithoutCancel(ctx), v, p.Wark, id)
			return w, rs, &Error{Kind: Unavailable, Msg: "the upload was restarted in the object store; send the chunks again", RetryAfter: time.Second}
		}
		if err != nil {
			return w, rs, err
		}
		w.Chunks += len(mid)
	}
	if err := stage(tail); err != nil {
		return w, rs, err
	}
	return w, rs, nil
}

// errRestaged: the publish found its name taken by another file, so the
// upload's parts (bound to that name) were dropped and the session moved
// to a free name; the chunks that were only in parts are asked again.
var errRestaged = errors.New("up2k: the upload's name was taken; its parts are asked again")

// remotePublishParts publishes an upload that has an upload of its own:
// the parts and staged groups, completed at the session's name.
func (m *Manager) remotePublishParts(ctx context.Context, v *store.Volume, rs *remoteSess, etag string) (string, error) {
	rec, t := rs.rec, rs.t
	rel := path.Join(rec.Dir, rec.Name)
	published := func() bool {
		oi, err := v.UpStat(ctx, rel)
		return err == nil && oi.Meta["hoard-wark"] == rec.Wark
	}
	for attempt := 0; ; attempt++ {
		st, err := loadState(ctx, v, rs)
		if err != nil {
			return "", err
		}
		slots, ok := st.plan(t, rec.Wark)
		if !ok {
			if published() {
				return rel, nil
			}
			return "", errNotAllIn
		}
		_, err = v.UpFinish(ctx, rel, rec.Upload, slots, store.UpPublish{Replace: rec.Replace, Meta: publishMeta(rec.Wark, rec.Lmod), Chunks: rec.Hashes})
		switch {
		case err == nil || published():
			return rel, nil
		case errors.Is(err, store.ErrExists) && !rec.Replace:
			return "", m.restage(ctx, v, rs, etag)
		case errors.Is(err, store.ErrNotFound) && attempt < 2:
			continue // a part changed between the listing and the completion
		}
		m.log.Warn("could not publish an upload", "volume", "/"+v.VPath, "path", rel, "wark", rec.Wark, "err", err)
		return "", err
	}
}

// errNotAllIn: a publish found a chunk missing after all (a part was
// replaced by a shorter one meanwhile); the client is asked for it.
var errNotAllIn = errors.New("up2k: not every chunk is in")

// restage drops the session's upload, whose name another file took, and
// moves the session to a free name (If-Match on the session object, so
// two nodes doing it at once agree).
func (m *Manager) restage(ctx context.Context, v *store.Volume, rs *remoteSess, etag string) error {
	rec := rs.rec
	// The new name is held for the session, the old one let go
	// (remotename.go).
	name, err := m.freeName(ctx, v, rec.Dir, rec.Name, rec.IP, false, rec.Wark)
	if err != nil {
		return err
	}
	old := path.Join(rec.Dir, rec.Name)
	rec.Name, rec.Upload = name, ""
	if err := putRemoteIf(ctx, v, rec, etag); errors.Is(err, store.ErrExists) {
		// Another node changed the session first (its own restage, or a
		// publish's touch that will find the name taken too): the next
		// publish decides again.
		m.remoteUnholdStale(ctx, v, path.Join(rec.Dir, name), rec.Wark)
		m.remote.drop(v, rec.Wark)
		return errRestaged
	} else if err != nil {
		m.remoteUnholdStale(ctx, v, path.Join(rec.Dir, name), rec.Wark)
		return err
	}
	m.remoteUnhold(ctx, v, old, rec.Wark)
	v.UpAbortUpload(ctx, old, rs.rec.Upload)
	m.remote.drop(v, rec.Wark)
	m.log.Warn("an upload's name was taken by another file; its parts are asked again", "volume", "/"+v.VPath, "path", old, "now", path.Join(rec.Dir, name), "wark", rec.Wark)
	return errRestaged
}

// loadRemoteTag is loadRemote with the session object's ETag.
func (m *Manager) loadRemoteTag(ctx context.Context, v *store.Volume, wark string) (*remoteSess, string, bool, error) {
	b, oi, err := v.UpGet(ctx, sessionObject(wark), maxSessionObject)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", false, nil
	}
	if err != nil {
		return nil, "", false, err
	}
	rs, err := decodeRemote(wark, b)
	if err != nil {
		return nil, "", false, err
	}
	return rs, oi.ETag, true, nil
}

// checkUploadID refuses an upload id hoard's store could not have given.
func checkUploadID(id string) error {
	if len(id) > 1024 {
		return fmt.Errorf("upload id of %d bytes", len(id))
	}
	if strings.IndexFunc(id, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
		return errors.New("bad upload id")
	}
	return nil
}

// forgetUpload clears the upload id from the session object of wark
// while it still names that upload (If-Match), after the store said the
// upload is gone; the next post begins another.
func (m *Manager) forgetUpload(ctx context.Context, v *store.Volume, wark, id string) {
	m.remote.drop(v, wark)
	rs, etag, ok, err := m.loadRemoteTag(ctx, v, wark)
	if err != nil || !ok || rs.rec.Upload != id || rs.rec.Final != "" {
		return
	}
	rec := rs.rec
	rec.Upload = ""
	if err := putRemoteIf(ctx, v, rec, etag); err != nil && !errors.Is(err, store.ErrExists) {
		m.log.Warn("could not forget an upload the store lost", "volume", "/"+v.VPath, "wark", wark, "err", err)
	}
}
