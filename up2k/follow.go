package up2k

import (
	"context"
	"strings"

	"hoard/store"
)

// follow drops the unfinished uploads that a folder delete or move takes
// away (the Manager subscribes it to the store). Their work files went with
// the folder: deleted, or moved along (then removed at the new place, so
// no invisible work file is left there), or left behind by a move across
// file systems and deleted with the source. The session is forgotten, so
// the client's next chunk gets copyparty's "unknown wark" and its next
// handshake starts over: it never completes a file that is not whole.
func (m *Manager) follow(e store.Event) {
	m.recent.event(e) // recent.go
	if !e.Tree || e.Kind != store.Removed && e.Kind != store.Moved {
		return
	}
	vol, rel := e.Vol, e.Rel
	if e.Kind == store.Moved {
		vol, rel = e.FromVol, e.From
	}
	m.mu.Lock()
	var hit []*session
	for _, s := range m.sessions {
		dir := topless(s.rec.Dir)
		if s.vol == vol && (dir == rel || rel == "" || strings.HasPrefix(dir, rel+"/")) {
			hit = append(hit, s)
		}
	}
	m.mu.Unlock()
	ctx := context.WithoutCancel(m.ctx)
	for _, s := range hit {
		if e.Kind == store.Moved {
			// The work file moved along: remove it at its new place.
			if t, err := e.Vol.OpenPartial(e.Rebase(topless(s.rec.Dir)), s.rec.Name); err == nil {
				t.Abort()
			}
		}
		select {
		case <-s.ready:
		default:
			continue // still being re-checked after a restart; that finds its work file gone and drops it
		}
		if s.err != nil {
			continue
		}
		s.mu.Lock()
		busy := s.finishing || s.done
		if !busy {
			s.gone, s.done = true, true // no new claims from here on
		}
		s.mu.Unlock()
		if busy {
			continue // publishing (it fails where the folder went) or finished
		}
		m.drop(ctx, s, "its folder was "+map[store.EventKind]string{store.Removed: "deleted", store.Moved: "moved"}[e.Kind])
	}
}

// topless is a session's folder as events name it: "" for the top.
func topless(dir string) string {
	if dir == "." {
		return ""
	}
	return dir
}
