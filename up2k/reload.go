package up2k

import (
	"context"
	"maps"

	"hoard/store"
)

// db is the session store of volume v (nil for a volume the Manager was
// never told of).
func (m *Manager) db(v *store.Volume) SessionStore { return (*m.dbs.Load())[v] }

// PrepareVolume readies a volume a configuration reload mounted, before
// it is served: db (nil: a MemStore) holds its sessions. It reads the
// sessions a previous run left there (unless db is the store of a volume
// already known, whose sessions are loaded) and changes nothing; commit
// takes them up (re-checking their chunks in the background, as Load)
// and accepts uploads into v from then on. Reloads call it one at a
// time, each commit before the next PrepareVolume.
func (m *Manager) PrepareVolume(ctx context.Context, v *store.Volume, db SessionStore) (commit func(), err error) {
	cur := *m.dbs.Load()
	if old, ok := cur[v]; ok && (db == nil || old == db) {
		return func() {}, nil
	}
	if db == nil {
		m.log.Warn("no session store for this volume; its unfinished uploads will not survive a restart", "volume", "/"+v.VPath)
		db = NewMemStore()
	}
	shared := false
	for _, d := range cur {
		shared = shared || d == db
	}
	if shared {
		return func() { m.publish(v, db) }, nil
	}
	if a, ok := db.(Availability); ok {
		select {
		case <-a.Ready():
		default:
			// Its state folder is full: its uploads are refused until it
			// opens, then its sessions load (as Load does).
			return func() {
				m.markWaiting(db)
				m.publish(v, db)
				m.loadWhenReady(v, db, a)
			}, nil
		}
	}
	install, err := m.readStore(ctx, v, db)
	if err != nil {
		return nil, err
	}
	return func() {
		install()
		m.publish(v, db)
	}, nil
}

// publish adds v's session store to the table, replacing it whole.
func (m *Manager) publish(v *store.Volume, db SessionStore) {
	next := maps.Clone(*m.dbs.Load())
	next[v] = db
	m.dbs.Store(&next)
}
