package store

import (
	"path"
	"slices"
	"strings"
)

// Follow keeps the shares in step with the volumes: subscribe it to the
// store (st.Subscribe(shares.Follow)). A share of a folder that is
// deleted or moved away (itself or a folder above it) is dropped, so its
// key stops resolving rather than serving whatever later takes that path;
// a share of some files of a folder loses the files deleted or moved away,
// and is dropped with the last one.
func (s *Shares) Follow(e Event) {
	var vol *Volume
	var rel string
	switch e.Kind {
	case Removed:
		vol, rel = e.Vol, e.Rel
	case Moved:
		vol, rel = e.FromVol, e.From
	default:
		return
	}
	if vol == nil {
		return
	}
	gone := strings.Trim(path.Join(vol.VPath, rel), "/")
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for k, sh := range s.m {
		switch {
		case underRel(sh.VPath, gone, e.Tree):
			delete(s.m, k)
			changed = true
		case len(sh.Files) > 0 && path.Dir("/"+gone) == "/"+sh.VPath:
			name := path.Base(gone)
			if i := slices.Index(sh.Files, name); i >= 0 {
				sh.Files = slices.Delete(slices.Clone(sh.Files), i, i+1)
				if len(sh.Files) == 0 {
					delete(s.m, k)
				}
				changed = true
			}
		}
	}
	if changed {
		// A failed save is retried with the next change of the shares;
		// until then they are dropped in memory only.
		s.save()
	}
}
