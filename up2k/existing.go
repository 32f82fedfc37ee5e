package up2k

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"path"
	"slices"
	"time"

	"hoard/store"
)

// existing looks for the handshake's content already on disk: a recorded
// file at the asked path (→ complete), an unrecorded file there with the
// same hashes (→ complete), or a recorded file elsewhere in the volume
// (→ refused with nodupe, else copied or linked to the asked path).
// ok is false when the content must be uploaded.
func (m *Manager) existing(ctx context.Context, h Handshake, cs int64, wark string) (rep Reply, ok bool, err error) {
	db := m.db(h.Vol)
	files, err := db.Files(ctx, wark)
	if err != nil {
		return Reply{}, false, err
	}
	target := path.Join(h.Dir, h.Name)
	var others []string
	rels := slices.Sorted(maps.Keys(files))
	for _, rel := range rels {
		fi, err := h.Vol.Stat(rel)
		if err != nil || !fi.Mode().IsRegular() || !fresh(files[rel], fi) {
			if err == nil || errors.Is(err, store.ErrNotFound) {
				db.DeleteFile(ctx, wark, rel) // stale; the file changed or went away
			}
			continue
		}
		if namesHere(rel, h.Dir, h.Name) {
			// Here already (possibly under the collision name it got).
			return m.here(ctx, h, wark, rel, fi)
		}
		others = append(others, rel)
	}
	if len(others) == 0 {
		if !h.MayRead {
			return Reply{}, false, nil // no hashing of what is there for one who may not read it
		}
		return m.unrecorded(ctx, h, cs, wark, target)
	}
	if h.Vol.Flags().NoDupe {
		where := urlPath(h.Vol, others[0])
		if !h.MayRead {
			where = "(elsewhere in this volume)"
		}
		return Reply{}, false, &Error{Kind: Conflict, Msg: "upload rejected, file already exists:\n" + where + " "}
	}
	if !h.MayRead {
		// A copy would tell one who may not read that the content is
		// here, unless they uploaded it themselves (same account, same
		// address). u2c needs that: it sends a tree's duplicates only as
		// a last handshake and drops what that asks for, so a write-only
		// account's duplicate was never stored while u2c reported it done.
		others = slices.DeleteFunc(others, func(rel string) bool { return !uploadedBy(files[rel], h.User, h.IP) })
		if len(others) == 0 {
			return Reply{}, false, nil // upload it
		}
	}
	// Prefer a source in the same folder, then the rest in path order.
	slices.SortStableFunc(others, func(a, b string) int {
		return boolInt(path.Dir(b) == h.Dir) - boolInt(path.Dir(a) == h.Dir)
	})
	for _, src := range others {
		rep, ok, err := m.clone(ctx, h, cs, wark, src)
		if ok || err != nil {
			return rep, ok, err
		}
	}
	return Reply{}, false, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// here answers a handshake whose content is already at its path.
func (m *Manager) here(ctx context.Context, h Handshake, wark, rel string, fi fs.FileInfo) (Reply, bool, error) {
	if h.Umod && fi.ModTime().Unix() != h.Lmod {
		t := time.Unix(h.Lmod, 0)
		// Through the store, so that the index follows (store.Touched).
		if err := m.st.SetMtime(ctx, store.Actor{User: h.User, IP: h.IP}, store.Loc{Vol: h.Vol, Rel: rel}, t); err != nil {
			return Reply{}, false, err
		}
		if nfi, err := h.Vol.Stat(rel); err == nil {
			fi = nfi
			if err := m.db(h.Vol).PutFile(context.WithoutCancel(ctx), wark, rel, metaOf(fi, 0, h.User, h.IP)); err != nil {
				return Reply{}, false, err
			}
		}
	}
	return Reply{Name: path.Base(rel), Dir: path.Dir(rel), Size: h.Size, Lmod: fi.ModTime().Unix(), Need: []string{}, Wark: wark, Sparse: true, Info: fi}, true, nil
}

// unrecorded checks a file at the asked path that no record knows: when
// its size and every chunk hash match, the upload is already complete.
func (m *Manager) unrecorded(ctx context.Context, h Handshake, cs int64, wark, target string) (Reply, bool, error) {
	fi, err := h.Vol.Stat(target)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != h.Size {
		return Reply{}, false, nil
	}
	if h.Size > 0 {
		f, _, err := h.Vol.Open(target)
		if err != nil {
			return Reply{}, false, nil
		}
		defer f.Close()
		items := make([]vitem, len(h.Hashes))
		for i, hs := range h.Hashes {
			_, cmp, _ := ParseHash(hs)
			items[i] = vitem{off: int64(i) * cs, n: chunkLen(h.Size, cs, i), cmp: cmp, id: i}
		}
		// The first chunk alone first: a handshake that names a big file
		// with made-up hashes costs one chunk of hashing, not the file.
		bad, err := m.hashCheck(ctx, f, items[:1])
		if err == nil && len(bad) == 0 {
			bad, err = m.hashCheck(ctx, f, items[1:])
		}
		if err != nil {
			return Reply{}, false, err
		}
		if len(bad) > 0 {
			return Reply{}, false, nil
		}
	}
	if err := m.db(h.Vol).PutFile(context.WithoutCancel(ctx), wark, target, metaOf(fi, 0, "", "")); err != nil {
		return Reply{}, false, err
	}
	return m.here(ctx, h, wark, target, fi)
}

// clone makes the asked file from src, a recorded file with the same
// content, after re-hashing src to prove it unchanged. ok is false when
// src turned out stale.
func (m *Manager) clone(ctx context.Context, h Handshake, cs int64, wark, src string) (Reply, bool, error) {
	db := m.db(h.Vol)
	f, _, err := h.Vol.Open(src)
	if err != nil {
		return Reply{}, false, nil
	}
	items := make([]vitem, len(h.Hashes))
	for i, hs := range h.Hashes {
		_, cmp, _ := ParseHash(hs)
		items[i] = vitem{off: int64(i) * cs, n: chunkLen(h.Size, cs, i), cmp: cmp, id: i}
	}
	bad, err := m.hashCheck(ctx, f, items)
	f.Close()
	if err != nil {
		return Reply{}, false, err
	}
	if len(bad) > 0 {
		db.DeleteFile(ctx, wark, src)
		return Reply{}, false, nil
	}
	if h.Rand || h.Vol.Flags().Rand {
		h.Name = randomName(h.Vol.Flags().NRand, h.Name)
	}
	replace, err := m.decideReplace(h)
	if err != nil {
		return Reply{}, false, err
	}
	opt := store.PublishOptions{Replace: replace, Mtime: time.Unix(h.Lmod, 0), Life: time.Duration(h.Life) * time.Second, Uploader: h.User, ClientIP: h.IP}
	var rel string
	var fi fs.FileInfo
	how := "copy"
	if h.Vol.Flags().Dedup {
		how = "hardlink"
		rel, fi, err = h.Vol.LinkFile(src, h.Dir, h.Name, opt)
		if err != nil && !isNameErr(err) {
			m.log.Info("dedup: no hard link here; copying instead", "volume", "/"+h.Vol.VPath, "src", src, "err", err)
			how = "copy"
			rel, fi, err = h.Vol.CopyFile(ctx, h.Vol, src, h.Dir, h.Name, opt)
		}
	} else {
		rel, fi, err = h.Vol.CopyFile(ctx, h.Vol, src, h.Dir, h.Name, opt)
	}
	if err != nil {
		return Reply{}, false, err
	}
	if err := db.PutFile(context.WithoutCancel(ctx), wark, rel, metaOf(fi, m.now().Unix(), h.User, h.IP)); err != nil {
		return Reply{}, false, err
	}
	m.log.Info("upload deduplicated", "volume", "/"+h.Vol.VPath, "path", rel, "from", src, "how", how, "size", h.Size, "user", h.User, "ip", h.IP)
	return Reply{Name: path.Base(rel), Dir: path.Dir(rel), Size: h.Size, Lmod: fi.ModTime().Unix(), Need: []string{}, Wark: wark, Sparse: true, Info: fi}, true, nil
}

// isNameErr reports errors about the target name, which a copy would hit
// as well.
func isNameErr(err error) bool {
	for _, e := range []error{store.ErrBadName, store.ErrNotDir, store.ErrIsDir, store.ErrReserved, store.ErrNoSub, store.ErrExists, store.ErrNoLifetime} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
