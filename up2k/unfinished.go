package up2k

import (
	"path/filepath"
	"slices"
	"time"

	"hoard/store"
)

// Unfinished describes one upload in progress, for listings such as ?ups.
type Unfinished struct {
	Vol     *store.Volume
	Rel     string // the final path inside the volume (reserved by the work file)
	Size    int64
	Done    int64 // bytes verified, durable and recorded
	Started time.Time
	User    string
	IP      string
}

// Unfinished returns the uploads in progress for which keep is true,
// newest first. Sessions still being set up or re-verified after a
// restart, and those publishing or gone, are left out.
func (m *Manager) Unfinished(keep func(*Unfinished) bool) []Unfinished {
	m.mu.Lock()
	live := make([]*session, 0, len(m.sessions))
	for _, s := range m.sessions {
		live = append(live, s)
	}
	m.mu.Unlock()
	var out []Unfinished
	for _, s := range live {
		select {
		case <-s.ready:
		default:
			continue
		}
		if s.err != nil {
			continue
		}
		s.mu.Lock()
		skip := s.done || s.finishing
		s.mu.Unlock()
		if skip {
			continue
		}
		u := Unfinished{Vol: s.vol, Rel: s.rel(), Size: s.rec.Size, Done: s.rec.Size - s.missing(), Started: time.Unix(0, s.rec.Created), User: s.rec.User, IP: s.rec.IP}
		if keep(&u) {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b Unfinished) int { return b.Started.Compare(a.Started) })
	return out
}

// Percent is how much of the upload is done, 0 to 100 (rounded down; 100
// only for an empty file).
func (u *Unfinished) Percent() int {
	if u.Size <= 0 {
		return 100
	}
	return int(u.Done * 100 / u.Size)
}

// Owns reports whether an upload session (live, or loaded and being
// re-checked) has its work file in folder dir of v under the final name
// name: the start-up sweep of a crash's leftovers keeps those. Paths are
// compared on disk, so a volume mounted inside another (or twice) agrees.
func (m *Manager) Owns(v *store.Volume, dir, name string) bool {
	want := filepath.Join(v.Src, filepath.FromSlash(dir), name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return true // its sessions are no longer known here, but they are stored
	}
	for k, s := range m.sessions {
		if k.wark == s.rec.Wark && s.rec.Name == name && filepath.Join(s.vol.Src, filepath.FromSlash(s.rec.Dir), s.rec.Name) == want {
			return true
		}
	}
	return false
}
