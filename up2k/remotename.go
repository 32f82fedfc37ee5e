package up2k

// Names held for their sessions on object-store volumes (docs/s3.md,
// "Names held for their sessions"). On disk a handshake's final name is
// held by its work file (or the manager's memory) until the upload is
// published or dropped, so a second upload of other content to that name
// gets its collision name at its own handshake. In a bucket shared by
// several nodes the name is held by a hold object (store.Volume.UpHold,
// written with If-None-Match: *, so of two nodes holding one name at
// once exactly one wins), naming the upload's wark:
//
//   - taken at the handshake that makes the session (before the session
//     object is written), and for the moment of a publish that goes to a
//     name chosen then (a server-side copy, an empty file, a collision
//     found at the publish), and when a session moves to a collision
//     name (restage);
//   - let go when the file is published (after the object is there,
//     before the session says where), when a session is not made after
//     all, and when a session moves;
//   - stale when its session is not there (after moments(): a hold is
//     written just before its session), is published, or names another
//     path: a handshake that meets a stale hold takes it over with
//     If-Match on its version (two at once: one wins), and every node's
//     expiry drops stale holds older than moments();
//   - a node that dies holding one: before its session was written, the
//     hold is stale after moments(); after, the session is in the bucket
//     and the name stays held until it is published or expires, as a
//     work file on disk holds it; between the publish and letting go, the
//     file itself has the name.

import (
	"context"
	"errors"
	"path"
	"sync"
	"time"

	"hoard/store"
)

// moments is how long a write that follows another "within moments"
// on an object-store volume is waited for: a hold without its session is
// taken as live (the session object is written moments after the hold),
// a mark without its session stays (remotecaps.go), a multipart upload
// begun after a session's last touch is its publish. A minute, or the
// idle time (--snap-drop) when that is shorter: nothing is kept longer
// than the session it stands for would be.
func (m *Manager) moments() time.Duration { return min(time.Minute, m.idle) }

// holdLive says whether the hold h (of the path rel) is its session's:
// the session of h.Wark is in the bucket, unpublished, at rel. An
// unreadable session counts as live (the name stays taken: the worst is a
// collision name).
func (m *Manager) holdLive(ctx context.Context, v *store.Volume, h store.Hold, rel string) bool {
	if h.Wark == "" {
		return false // not a hold hoard wrote
	}
	rs, ok, err := m.loadRemote(ctx, v, h.Wark)
	if err != nil {
		return true
	}
	if !ok {
		return m.now().Sub(h.ModTime) < m.moments()
	}
	return rs.rec.Final == "" && path.Join(rs.rec.Dir, rs.rec.Name) == rel
}

// remoteHold makes the upload wark hold the name rel; false when another
// upload's live hold has it.
func (m *Manager) remoteHold(ctx context.Context, v *store.Volume, rel, wark string) (bool, error) {
	for range 4 {
		err := v.UpHold(ctx, rel, wark)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, store.ErrExists) {
			return false, err
		}
		h, err := v.UpHolder(ctx, rel)
		if errors.Is(err, store.ErrNotFound) {
			continue // let go meanwhile
		}
		if err != nil {
			return false, err
		}
		if h.Wark == wark {
			return true, nil // this upload's own (a handshake again, or another node's at once)
		}
		if m.holdLive(ctx, v, h, rel) {
			return false, nil
		}
		err = v.UpHoldOver(ctx, rel, wark, h.ETag)
		if err == nil {
			m.log.Info("stale name hold taken over", "volume", "/"+v.VPath, "path", rel, "from", h.Wark, "wark", wark)
			return true, nil
		}
		if !errors.Is(err, store.ErrExists) && !errors.Is(err, store.ErrNotFound) {
			return false, err
		}
		// Another handshake changed or dropped it first: look again.
	}
	return false, nil
}

// remoteUnhold lets the hold of rel by wark go (best effort: a hold left
// is stale and dropped by the expiry, or taken over).
func (m *Manager) remoteUnhold(ctx context.Context, v *store.Volume, rel, wark string) {
	if err := v.UpUnhold(context.WithoutCancel(ctx), rel, wark, ""); err != nil {
		m.log.Warn("could not let go of an upload's name", "volume", "/"+v.VPath, "path", rel, "wark", wark, "err", err)
	}
}

// remoteUnholdStale lets the hold of rel by wark go unless the session
// of wark (read afresh) holds it: after a session object was not written
// as this node meant (another node's session of the same content, which
// may hold the same name, or a store that failed after all).
func (m *Manager) remoteUnholdStale(ctx context.Context, v *store.Volume, rel, wark string) {
	ctx = context.WithoutCancel(ctx)
	rs, ok, err := m.loadRemote(ctx, v, wark)
	if err != nil {
		return // the expiry decides later
	}
	if ok && rs.rec.Final == "" && path.Join(rs.rec.Dir, rs.rec.Name) == rel {
		return
	}
	m.remoteUnhold(ctx, v, rel, wark)
}

// freeName is store.Volume.UpFreeName with the name held for wark.
func (m *Manager) freeName(ctx context.Context, v *store.Volume, dir, name, ip string, replace bool, wark string) (string, error) {
	return v.UpFreeName(ctx, dir, name, ip, replace,
		func(n string) (bool, error) { return m.remoteHold(ctx, v, path.Join(dir, n), wark) },
		func(n string) { m.remoteUnhold(ctx, v, path.Join(dir, n), wark) })
}

// sweepHolds drops the holds of v older than moments() whose session is
// not in the bucket (present says, from the expiry's listing of the
// sessions; a session dropped by this expiry is not): a node died between
// writing the hold and the session, or the session expired. A hold whose
// session is there but published or moved (its node died, or the store
// failed, before letting it go) is taken over by the next handshake that
// meets it, and dropped here once that session expires. Every node does
// it; a hold taken over meanwhile is a new version and stays. A hold's
// body is read once per version (holdCache). It returns how many it
// dropped.
func (m *Manager) sweepHolds(ctx context.Context, v *store.Volume, present func(wark string) bool) int {
	now := m.now()
	var old []store.Hold
	err := v.UpHolds(ctx, func(h store.Hold) error {
		if now.Sub(h.ModTime) >= m.moments() {
			old = append(old, h)
		}
		return nil
	})
	if err != nil {
		m.log.Warn("could not list the name holds of an object-store volume", "volume", "/"+v.VPath, "err", err)
		return 0
	}
	n := 0
	for _, h := range old {
		full, ok := m.holdBodies.get(h)
		if !ok {
			var err error
			full, err = v.UpReadHold(ctx, h)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				m.log.Warn("could not read a name hold", "volume", "/"+v.VPath, "err", err)
				return n
			}
			if full.ETag != h.ETag {
				continue // changed since the listing: next time
			}
			m.holdBodies.put(full)
		}
		if full.Wark != "" && present(full.Wark) {
			continue
		}
		if err := v.UpDropHold(ctx, full); err != nil {
			m.log.Warn("could not drop a stale name hold", "volume", "/"+v.VPath, "path", full.Rel, "err", err)
			continue
		}
		m.holdBodies.drop(full)
		n++
		m.log.Info("stale name hold dropped", "volume", "/"+v.VPath, "path", full.Rel, "wark", full.Wark, "store", "object")
	}
	return n
}

// holdCache keeps the holds this node has read, by key and version: a
// version's body never changes, so the sweep reads each once.
type holdCache struct {
	mu sync.Mutex
	m  map[string]store.Hold
}

const holdCacheMax = 4096

func (c *holdCache) get(h store.Hold) (store.Hold, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.m[h.HoldKey()+"\x00"+h.ETag]
	return f, ok
}

func (c *holdCache) put(h store.Hold) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= holdCacheMax {
		c.m = map[string]store.Hold{}
	}
	c.m[h.HoldKey()+"\x00"+h.ETag] = h
}

func (c *holdCache) drop(h store.Hold) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, h.HoldKey()+"\x00"+h.ETag)
}
