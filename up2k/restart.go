package up2k

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"hoard/store"
)

// Load takes up the unfinished uploads of a previous run from the session
// stores. Each session can be resumed once its recorded chunks have been
// re-hashed against its work file (in the background, on all cores);
// chunks that fail become needed again. Sessions whose work file is gone
// are forgotten. Call Load once, before serving requests. A store that is
// not open yet (its state folder is full) is loaded once it opens; until
// then uploads into its volumes are refused.
func (m *Manager) Load(ctx context.Context) error {
	seen := map[SessionStore]bool{}
	for _, v := range m.st.Mounted() {
		db := m.db(v)
		if seen[db] {
			continue // volumes sharing a state folder share their sessions
		}
		seen[db] = true
		if a, ok := db.(Availability); ok {
			select {
			case <-a.Ready():
			default:
				m.markWaiting(db)
				m.loadWhenReady(v, db, a)
				continue
			}
		}
		if err := m.loadStore(ctx, v, db); err != nil {
			return err
		}
	}
	return nil
}

// loadStore takes up the sessions of one store (first used by volume v).
func (m *Manager) loadStore(ctx context.Context, v *store.Volume, db SessionStore) error {
	install, err := m.readStore(ctx, v, db)
	if err != nil {
		return err
	}
	install()
	return nil
}

// readStore reads the sessions of one store (first used by volume v),
// changing nothing; install takes them up (and forgets those it could
// not read).
func (m *Manager) readStore(ctx context.Context, v *store.Volume, db SessionStore) (install func(), err error) {
	var loaded []*session
	var keys [][]string
	var bad []string
	err = db.Sessions(ctx, func(wark string, blob []byte, chunks []string) error {
		s, err := m.restore(v, db, wark, blob)
		if err != nil {
			m.log.Warn("forgetting an unreadable upload session", "volume", "/"+v.VPath, "wark", wark, "err", err)
			bad = append(bad, wark)
			return nil
		}
		loaded = append(loaded, s)
		keys = append(keys, chunks)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("up2k: loading the upload sessions of /%s: %w", v.VPath, err)
	}
	return func() {
		for _, w := range bad {
			db.DeleteSession(ctx, w)
		}
		m.mu.Lock()
		for _, s := range loaded {
			k := skey{s.db, s.rec.Wark}
			if m.sessions[k] != nil {
				continue // volumes sharing a store
			}
			m.sessions[k] = s
			m.names[nameKey{s.vol, s.rec.Dir, s.rec.Name}] = s.rec.Wark
			m.countLocked(s)
		}
		m.mu.Unlock()
		if len(loaded) > 0 {
			m.log.Info("resuming unfinished uploads; re-checking their chunks", "sessions", len(loaded))
		}
		for i, s := range loaded {
			m.wg.Add(1)
			go func() {
				defer m.wg.Done()
				m.reverify(s, keys[i])
			}()
		}
	}, nil
}

// unavailable returns why uploads into db cannot start now (its state
// folder is full, or its sessions are not loaded yet), or nil.
func (m *Manager) unavailable(db SessionStore) error {
	m.mu.Lock()
	waiting := m.waiting[db]
	m.mu.Unlock()
	a, ok := db.(Availability)
	if ok {
		if err := a.Unavailable(); err != nil {
			return err
		}
	}
	if waiting {
		return &Error{Kind: Unavailable, Msg: "the unfinished uploads of this volume are being loaded; try again in a few seconds"}
	}
	return nil
}

// restore rebuilds a session from its stored blob.
func (m *Manager) restore(v *store.Volume, db SessionStore, wark string, blob []byte) (*session, error) {
	var rec record
	if err := json.Unmarshal(blob, &rec); err != nil {
		return nil, err
	}
	if rec.Wark != wark {
		return nil, fmt.Errorf("stored under %s but names %s", wark, rec.Wark)
	}
	if rec.Size <= 0 || rec.Size > MaxSize {
		return nil, fmt.Errorf("size %d", rec.Size)
	}
	if cs, err := ChunkSizeFor(rec.Size, len(rec.Hashes)); err != nil || cs != rec.CS {
		return nil, fmt.Errorf("chunk size %d does not fit %d hashes for %d bytes", rec.CS, len(rec.Hashes), rec.Size)
	}
	if _, err := cleanDir(rec.Dir); err != nil {
		return nil, err
	}
	if err := store.CheckName(rec.Name); err != nil {
		return nil, err
	}
	s, _, err := newSession(v, db, rec) // its table is loaded again when needed
	if s != nil {
		s.mgr = m
	}
	return s, err
}

// reverify hashes the recorded chunks of a restored session against its
// work file and makes the session ready.
func (m *Manager) reverify(s *session, keys []string) {
	ctx := m.ctx
	fail := func(why string, err error) {
		m.log.Warn("dropping an unfinished upload", "volume", "/"+s.vol.VPath, "path", s.rel(), "wark", s.rec.Wark, "why", why, "err", err)
		m.drop(ctx, s, why)
		s.err = errRetry
		close(s.ready)
	}
	t, err := s.vol.OpenPartial(s.rec.Dir, s.rec.Name)
	if err != nil {
		// Published where the file system has no hard links (the work
		// file was renamed), and the record not made before a crash?
		if errors.Is(err, store.ErrNotFound) {
			if rel, ok := m.publishedByContent(ctx, s); ok {
				m.closePublished(ctx, s, rel)
				return
			}
			if s.rec.Lazy && len(keys) == 0 {
				// Its work file was never made (or was an unnamed one,
				// gone with the process): nothing of it is stored, and
				// it goes on with every chunk needed.
				s.mu.Lock()
				s.poke = m.now()
				s.mu.Unlock()
				close(s.ready)
				return
			}
		}
		fail("its work file is gone", err)
		return
	}
	defer t.Close()
	// Published, and the record not made before a crash: the work file
	// is a second name of the published file.
	if rel, _, err := s.vol.PublishedAs(s.rec.Dir, s.rec.Name); err == nil && rel != "" {
		t.Close()
		m.closePublished(ctx, s, rel)
		return
	}
	// Published and group-committed, and the crash lost the file's
	// bytes: the start-up replay (store/gcommit.go) wrote it again under
	// its name, as a new file, so the work file is no second name of it.
	// It has the session's size and every chunk hash.
	if fi, err := s.vol.Stat(path.Join(s.rec.Dir, s.rec.Name)); err == nil && fi.Mode().IsRegular() && fi.Size() == s.rec.Size && s.rec.Size <= store.SmallFile {
		if rel, ok := m.publishedByContent(ctx, s); ok {
			t.Close()
			m.closePublished(ctx, s, rel)
			return
		}
	}
	fi, err := t.File.Stat()
	if err != nil || fi.Size() != s.rec.Size {
		fail("its work file has the wrong size", err)
		return
	}
	var tab *table
	if len(keys) > 0 {
		// A few at a time: each holds its table while it hashes.
		select {
		case m.rsem <- struct{}{}:
			defer func() { <-m.rsem }()
		case <-ctx.Done():
			s.err = ctx.Err()
			close(s.ready)
			return
		}
		if tab, err = m.table(ctx, s); err != nil {
			if ctx.Err() != nil {
				s.err = ctx.Err()
				close(s.ready)
				return
			}
			fail("its stored record is unreadable", err)
			return
		}
	}
	var items []vitem
	var known []int
	for _, k := range keys {
		u, ok := tab.lookup(k)
		if !ok {
			continue
		}
		known = append(known, u)
		cmp := tab.cmp(u)
		items = append(items, vitem{off: tab.start(u), n: tab.length(u), cmp: cmp, id: u})
		for _, j := range tab.copies(u) {
			items = append(items, vitem{off: int64(j) * s.rec.CS, n: tab.length(u), cmp: cmp, id: u})
		}
	}
	t0 := time.Now()
	bad, err := m.hashCheck(ctx, t.File, items)
	if err != nil {
		// Shutting down: leave the session as stored for the next start.
		s.err = err
		close(s.ready)
		return
	}
	isBad := map[int]bool{}
	var badKeys []string
	for _, u := range bad {
		isBad[u] = true
		badKeys = append(badKeys, tab.key(u))
	}
	if len(badKeys) > 0 {
		if err := s.db.DropChunks(ctx, s.rec.Wark, badKeys); err != nil && !errors.Is(err, context.Canceled) {
			m.log.Error("forgetting damaged chunks failed", "wark", s.rec.Wark, "err", err)
		}
	}
	s.mu.Lock()
	for _, u := range known {
		if !isBad[u] {
			s.gotLocked(tab, u)
		}
	}
	s.dirSynced = true // it was found by name after a restart
	s.receipts = len(keys) > 0
	s.poke = m.now()
	s.mu.Unlock()
	m.log.Info("unfinished upload resumed", "volume", "/"+s.vol.VPath, "path", s.rel(), "wark", s.rec.Wark,
		"chunks", s.nu, "have", len(known)-len(bad), "damaged", len(bad), "took", time.Since(t0).Round(time.Millisecond))
	close(s.ready)
}

// closePublished finishes the bookkeeping of a session whose file was
// published before a crash: the index is told (and the lifetime set), the
// session becomes the file record, and the work file (when it is a second
// name of the file) is removed. A crash in between repeats what is left
// at the next start.
func (m *Manager) closePublished(ctx context.Context, s *session, rel string) {
	fi, err := s.vol.Announce(rel, s.publishOptions())
	if err == nil {
		err = s.db.Finish(ctx, s.rec.Wark, rel, metaOf(fi, m.now().Unix(), s.rec.User, s.rec.IP))
	}
	if err != nil {
		// Shutting down, or the state folder failing: the session stays
		// as stored, and the next start tries again.
		m.log.Error("an upload published before a crash could not be recorded as finished", "volume", "/"+s.vol.VPath, "path", rel, "wark", s.rec.Wark, "err", err)
		s.err = ErrClosed
		close(s.ready)
		return
	}
	if err := s.vol.RemoveWork(s.rec.Dir, s.rec.Name); err != nil {
		m.log.Warn("removing a published upload's work file failed", "volume", "/"+s.vol.VPath, "path", rel, "err", err)
	}
	s.mu.Lock()
	s.done, s.final, s.finalInfo.lmod = true, rel, fi.ModTime().Unix()
	s.mu.Unlock()
	m.log.Info("an upload published just before a crash is recorded as finished", "volume", "/"+s.vol.VPath, "path", rel, "wark", s.rec.Wark)
	m.remove(s)
	s.err = errRetry // looked up again, it is found by its record
	close(s.ready)
}

// publishedByContent looks for the file of a session whose work file is
// gone: where hard links are missing, publishing renames the work file, so
// a crash before the record leaves the file under its final name (or a
// collision name of it) and no work file. It must have the session's size
// and every chunk hash.
func (m *Manager) publishedByContent(ctx context.Context, s *session) (string, bool) {
	ents, err := s.vol.List(ctx, s.rec.Dir, store.ListOptions{Dots: true, Lstat: true})
	if err != nil {
		return "", false
	}
	tab, err := m.table(ctx, s)
	if err != nil {
		return "", false
	}
	items := make([]vitem, tab.n)
	for i := range items {
		_, cmp, _ := ParseHash(tab.sentOfChunk(i))
		items[i] = vitem{off: int64(i) * s.rec.CS, n: chunkLen(s.rec.Size, s.rec.CS, i), cmp: cmp, id: i}
	}
	for _, e := range ents {
		if e.Dir || e.Link || !e.Mode.IsRegular() || e.Size != s.rec.Size || (e.Name != s.rec.Name && !strings.HasPrefix(e.Name, s.rec.Name+"-")) {
			continue
		}
		rel := path.Join(s.rec.Dir, e.Name)
		f, _, err := s.vol.Open(rel)
		if err != nil {
			continue
		}
		bad, err := m.hashCheck(ctx, f, items)
		f.Close()
		if err == nil && len(bad) == 0 {
			return rel, true
		}
	}
	return "", false
}

// expireLoop discards sessions idle for longer than m.idle.
func (m *Manager) expireLoop() {
	defer m.wg.Done()
	every := min(max(m.idle/8, time.Second), time.Minute)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-tick.C:
			m.Expire(m.ctx)
		}
	}
}

// Expire discards the sessions idle for longer than --snap-drop, with
// their work files. It runs periodically; tests call it directly.
func (m *Manager) Expire(ctx context.Context) int {
	now := m.now()
	var old []*session
	m.mu.Lock()
	for _, s := range m.sessions {
		select {
		case <-s.ready:
		default:
			continue // being made or re-checked
		}
		if s.err != nil {
			continue
		}
		s.mu.Lock()
		idle := !s.finishing && !s.done && now.Sub(s.poke) >= m.idle
		for _, b := range s.busy {
			idle = idle && !b
		}
		if idle {
			s.gone, s.done = true, true // no new claims from here on
			old = append(old, s)
		}
		s.mu.Unlock()
	}
	m.mu.Unlock()
	for _, s := range old {
		m.drop(ctx, s, fmt.Sprintf("idle for more than %v", m.idle))
	}
	return len(old) + m.expireRemote(ctx)
}

// markWaiting refuses db's uploads until loadWhenReady has loaded them.
func (m *Manager) markWaiting(db SessionStore) {
	m.mu.Lock()
	m.waiting[db] = true
	m.mu.Unlock()
}

// loadWhenReady loads db's sessions once its state folder opens (a full
// one refuses its uploads until then) and ends the wait markWaiting began.
func (m *Manager) loadWhenReady(v *store.Volume, db SessionStore, a Availability) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		select {
		case <-a.Ready():
		case <-m.ctx.Done():
			return
		}
		if err := m.loadStore(m.ctx, v, db); err != nil {
			m.log.Error("loading the upload sessions failed", "volume", "/"+v.VPath, "err", err)
		}
		m.mu.Lock()
		delete(m.waiting, db)
		m.mu.Unlock()
	}()
}
