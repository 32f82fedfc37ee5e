package up2k

import (
	"context"
	"path"
	"time"

	"hoard/store"
)

// Orphaned multipart uploads (docs/s3.md, "Expiry"). A node that dies
// between beginning the upload of a session's file (remoteUpload:
// CreateMultipartUpload) and recording its id in the session object
// leaves an upload no session names; so does a node that dies while it
// streams a PUT or publishes staged chunks. S3 keeps such an upload, and
// bills its parts, for ever. The sweep (expireRemote) aborts every
// unfinished upload below the volume's prefix that
//   - no session names (its id is no session's rec.Upload, each session
//     read afresh from the bucket, never from a node's cache), and
//   - was begun, and got its newest part, longer ago than orphanAge: the
//     idle time (--snap-drop) at a key a session names as its file (the
//     dead node's upload: a live one records its id within moments of
//     beginning it, and a staged publish writes a part at least every
//     few seconds), else max(idle, orphanFloor) — a PUT or publish of a
//     node that died, or another S3 client's upload into the prefix,
//     which hoard cannot tell from a live one but by its age.
//
// A named upload is never aborted here (its session's expiry does that).

// orphanFloor is the least age of an unfinished upload at a key no
// session names before the sweep aborts it.
const orphanFloor = 24 * time.Hour

// orphanAge is how long an unfinished upload that no session names must
// have been idle before it is aborted; sessKey says whether a session
// names its key as the session's file.
func orphanAge(sessKey bool, idle time.Duration) time.Duration {
	if sessKey {
		return idle
	}
	return max(idle, orphanFloor)
}

// orphanCandidate says whether an upload begun at initiated may be an
// orphan by its age alone (its parts are looked at next).
func orphanCandidate(now, initiated time.Time, sessKey, named bool, idle time.Duration) bool {
	return !named && now.Sub(initiated) >= orphanAge(sessKey, idle)
}

// sweepOrphans aborts the orphaned uploads of v (above); warks are the
// sessions in the bucket. It returns how many it aborted.
func (m *Manager) sweepOrphans(ctx context.Context, v *store.Volume, warks []string) int {
	now := m.now()
	type up struct {
		rel string
		u   store.ObjectUpload
	}
	var old []up
	err := v.UpUploads(ctx, func(rel string, u store.ObjectUpload) error {
		if now.Sub(u.Initiated) >= m.idle {
			old = append(old, up{rel, u})
		}
		return nil
	})
	if err != nil {
		m.log.Warn("could not list the unfinished uploads of an object-store volume", "volume", "/"+v.VPath, "err", err)
		return 0
	}
	if len(old) == 0 {
		return 0
	}
	// Which ids and keys the sessions name, read from the bucket now: a
	// node's cache may predate the id another node recorded.
	named, keys := map[string]bool{}, map[string]bool{}
	for _, wark := range warks {
		rs, _, ok, err := m.loadRemoteTag(ctx, v, wark)
		if err != nil {
			// A session that cannot be read might name any of them.
			m.log.Warn("could not read an upload session; orphaned uploads are left for now", "volume", "/"+v.VPath, "wark", wark, "err", err)
			return 0
		}
		if !ok {
			continue
		}
		if rs.rec.Upload != "" {
			named[rs.rec.Upload] = true
		}
		keys[path.Join(rs.rec.Dir, rs.rec.Name)] = true
	}
	n := 0
	for _, o := range old {
		sessKey := keys[o.rel]
		if !orphanCandidate(now, o.u.Initiated, sessKey, named[o.u.ID], m.idle) {
			continue
		}
		parts, err := v.UpListedParts(ctx, o.u)
		if err != nil {
			continue // gone meanwhile, or the store is down: next time
		}
		busy := false
		for _, p := range parts {
			if now.Sub(p.ModTime) < orphanAge(sessKey, m.idle) {
				busy = true
			}
		}
		if busy {
			continue
		}
		if err := v.UpAbortListed(ctx, o.u); err != nil {
			m.log.Warn("could not abort an orphaned upload", "volume", "/"+v.VPath, "key", o.u.Key, "err", err)
			continue
		}
		n++
		m.log.Info("orphaned upload aborted", "volume", "/"+v.VPath, "path", o.rel, "begun", o.u.Initiated, "store", "object")
	}
	return n
}
