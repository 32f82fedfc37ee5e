package arch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"hoard/store"
)

// Scope is where a selection of names is resolved: the folder being
// archived and the user asking.
type Scope struct {
	Store *store.Store
	Vol   *store.Volume // the folder's volume; nil for a folder of URLs only
	Rel   string        // the folder inside Vol
	Parts []string      // the folder's URL path, in components
	Share bool          // a share's view: names resolve inside the shared folder only
	User  string
	NoDot bool // no dotfiles even with the . permission (?nodot)
}

// Select adds the selected names (relative to the folder, "/"-separated)
// to w, each resolved as its URL would be: inside the folder's volume, or
// in a volume mounted below it (which then needs the r permission there),
// or a folder of URLs only above such volumes. Every name is checked
// before anything is added: one that is empty, malformed, never archived
// (Excluded), a dotfile w may not take, missing, outside the folder or
// unreadable refuses the whole selection (KindInvalid or KindForbidden).
// A name below another selected folder is left to that folder.
func (w *Walker) Select(ctx context.Context, sc Scope, names []string) error {
	seen := map[string]bool{}
	var clean []string
	for _, name := range names {
		name = strings.TrimSuffix(name, "/")
		if name == "" {
			return selErr(store.KindInvalid, "an empty name in the selection")
		}
		for _, c := range strings.Split(name, "/") {
			if err := store.CheckName(c); err != nil {
				return selErr(store.KindInvalid, "bad name in the selection: %q (names are relative to the folder, without . or ..)", name)
			}
			if Excluded(c) {
				return selErr(store.KindForbidden, "%q is never archived", name)
			}
			if strings.HasPrefix(c, ".") && !w.Dots {
				return selErr(store.KindForbidden, "%q is a dotfile; that needs the . permission (and no nodot)", name)
			}
		}
		if !seen[name] {
			seen[name] = true
			clean = append(clean, name)
		}
	}
	for _, name := range clean {
		if selectedAbove(name, seen) {
			continue
		}
		err := w.selectOne(ctx, sc, name)
		switch {
		case err == nil:
		case errors.Is(err, fs.ErrPermission):
			return selErr(store.KindForbidden, "%q is not readable", name)
		case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrOutside), errors.Is(err, store.ErrNotDir):
			return selErr(store.KindInvalid, "%q is not in this folder", name)
		default:
			return err
		}
	}
	return nil
}

func selErr(k store.Kind, format string, args ...any) error {
	return &store.Error{Op: "archive", Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// selectOne adds one selected name (see Select).
func (w *Walker) selectOne(ctx context.Context, sc Scope, name string) error {
	parts := append(sc.Parts[:len(sc.Parts):len(sc.Parts)], strings.Split(name, "/")...)
	v, rel := sc.Vol, path.Join(sc.Rel, name) // a share: the shared folder only
	if !sc.Share {
		v, rel = sc.Store.Resolve(parts)
	} else if sc.Store.Shadowed(v, rel) {
		return store.ErrNotFound // another volume's by URL
	}
	if v == nil {
		if len(sc.Store.MountsBelow(parts)) > 0 {
			return w.AddMounts(ctx, strings.Join(parts, "/"), name+"/")
		}
		return store.ErrNotFound
	}
	sub := w
	if v != sc.Vol {
		p := v.Perms(sc.User)
		if !p.Has(store.PermRead) {
			return fmt.Errorf("%w: a volume the user may not read", fs.ErrPermission)
		}
		sub = &Walker{Vol: v, Dots: p.Has(store.PermDot) && !sc.NoDot, Mounts: w.Mounts}
	}
	fi, err := v.Stat(rel)
	switch {
	case errors.Is(err, store.ErrNotFound) && len(sc.Store.MountsBelow(parts)) > 0:
		err = sub.AddMounts(ctx, strings.Join(parts, "/"), name+"/")
	case err == nil && fi.IsDir():
		err = sub.AddFolder(ctx, rel, name+"/")
	case err == nil:
		err = sub.AddFile(rel, name)
	}
	if sub != w {
		w.Files = append(w.Files, sub.Files...)
		w.Errs = append(w.Errs, sub.Errs...)
	}
	return err
}

// selectedAbove reports whether a parent folder of name is selected too.
func selectedAbove(name string, sel map[string]bool) bool {
	for i := strings.LastIndexByte(name, '/'); i > 0; i = strings.LastIndexByte(name[:i], '/') {
		if sel[name[:i]] {
			return true
		}
	}
	return false
}

// MountsOf is Walker.Mounts for user: the volumes of st mounted directly
// below a URL path, and what user may do in them. A folder's archive
// holds the volumes mounted below it that the user may read (copyparty's
// rule), each with its own dotfile permission (none with noDot), in place
// of any real folder they hide. In a share's view (share) no mount below
// goes in: a share is one folder.
func MountsOf(st *store.Store, user string, share, noDot bool) func(url string) []Mount {
	return func(url string) []Mount {
		var parts []string
		if url != "" {
			parts = strings.Split(url, "/")
		}
		var out []Mount
		for name, vols := range st.MountsBelow(parts) {
			m := Mount{Name: name}
			for _, v := range vols {
				if v.VPath == path.Join(url, name) {
					p := v.Perms(user)
					m.Vol, m.Read, m.Dots = v, p.Has(store.PermRead), p.Has(store.PermDot) && !noDot
					if share {
						m.Read = false // a share is one folder: a mount below it hides its folder and stays out
					}
				}
			}
			out = append(out, m)
		}
		return out
	}
}
