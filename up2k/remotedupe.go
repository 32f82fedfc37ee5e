package up2k

// Content already in an object-store volume (docs/s3.md, "Identical
// content elsewhere"): existing is for disk what remoteExisting is here.
// Where a content lies is read from the bucket (store.Volume.UpWhere:
// records written before each file with that content, checked against
// the object's own hoard-wark), never from a node's index, so every node
// sees an upload through another at once.

import (
	"context"
	"errors"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"hoard/store"
)

// remoteExisting looks for the handshake's content published in the
// volume: at the asked path (or a collision name of it in the folder) it
// is done (its mtime set with umod); elsewhere it is refused under
// nodupe, else copied server-side to the asked name. extra is a path a
// session record names (its Final), looked at too. ok is false when the
// content must be uploaded.
func (m *Manager) remoteExisting(ctx context.Context, h Handshake, wark, extra string) (Reply, bool, error) {
	v := h.Vol
	ois, rels, err := v.UpWhere(ctx, wark)
	if err != nil {
		return Reply{}, false, err
	}
	// The asked path itself: a file there with this content, recorded or
	// not (an upload from before the records, another node's).
	for _, p := range []string{path.Join(h.Dir, h.Name), extra} {
		if p == "" || slices.Contains(rels, p) {
			continue
		}
		oi, err := v.UpStat(ctx, p)
		switch {
		case err == nil && oi.Meta["hoard-wark"] == wark:
			ois, rels = append(ois, oi), append(rels, p)
		case err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrIsDir) && !errors.Is(err, store.ErrNotDir):
			return Reply{}, false, err
		}
	}
	mine := func(oi store.ObjectInfo) bool {
		return h.MayRead || h.IP != "" && oi.Meta["hoard-uploader"] == h.User && oi.Meta["hoard-ip"] == h.IP
	}
	target := path.Join(h.Dir, h.Name)
	var others []int
	for i, rel := range rels {
		if rel == target || path.Dir(rel) == h.Dir && strings.HasPrefix(path.Base(rel), h.Name+"-") {
			if mine(ois[i]) { // what one learns is only that one's own file is in
				rep, err := m.remoteHere(ctx, h, wark, rel, ois[i])
				return rep, err == nil, err
			}
			continue
		}
		others = append(others, i)
	}
	if len(others) == 0 {
		return Reply{}, false, nil
	}
	if v.Flags().NoDupe {
		where := urlPath(v, rels[others[0]])
		if !h.MayRead {
			where = "(elsewhere in this volume)"
		}
		m.log.Info("dupe rejected", "volume", "/"+v.VPath, "path", target, "have", rels[others[0]], "user", h.User, "ip", h.IP)
		return Reply{}, false, &Error{Kind: Conflict, Msg: "upload rejected, file already exists:\n" + where + " "}
	}
	// A copy would tell one who may not read that the content is here,
	// unless they uploaded it themselves (as on disk).
	others = slices.DeleteFunc(others, func(i int) bool { return !mine(ois[i]) })
	// Prefer a source in the same folder, then the rest in path order.
	slices.SortStableFunc(others, func(a, b int) int {
		return boolInt(path.Dir(rels[b]) == h.Dir) - boolInt(path.Dir(rels[a]) == h.Dir)
	})
	for _, i := range others {
		rep, ok, err := m.remoteCopy(ctx, h, wark, rels[i])
		if ok || err != nil {
			return rep, ok, err
		}
	}
	return Reply{}, false, nil
}

// remoteHere answers a handshake whose content is the file rel (object
// oi): done, and with umod the file gets the upload's mtime.
func (m *Manager) remoteHere(ctx context.Context, h Handshake, wark, rel string, oi store.ObjectInfo) (Reply, error) {
	lmod := oi.ModTime.Unix()
	if l, err := strconv.ParseInt(oi.Meta["hoard-lmod"], 10, 64); err == nil && l > 0 {
		lmod = l
	}
	if h.Umod && lmod != h.Lmod {
		noi, err := h.Vol.UpTouch(ctx, rel, oi, h.Lmod)
		if err != nil {
			return Reply{}, err
		}
		oi, lmod = noi, h.Lmod
	}
	return Reply{Name: path.Base(rel), Dir: path.Dir(rel), Size: h.Size, Lmod: lmod, Need: []string{}, Wark: wark, Sparse: true, Info: store.ObjectFileInfo(oi)}, nil
}

// remoteCopy publishes the handshake's file as a server-side copy of src
// (a file of the volume with this content): nothing is asked for. Clients
// rely on it: u2c sends a file's duplicates in one run only as a last
// handshake, and drops what that asks for. ok is false when src is no
// longer that content: upload it.
func (m *Manager) remoteCopy(ctx context.Context, h Handshake, wark, src string) (Reply, bool, error) {
	v := h.Vol
	if h.Rand || v.Flags().Rand {
		h.Name = randomName(v.Flags().NRand, h.Name)
	}
	replace, err := m.remoteReplace(ctx, h)
	if err != nil {
		return Reply{}, false, err
	}
	for range 4 {
		// A name no other upload holds, held for the moment of the copy
		// (remotename.go).
		name, err := m.freeName(ctx, v, h.Dir, h.Name, h.IP, replace, wark)
		if err != nil {
			return Reply{}, false, err
		}
		rel := path.Join(h.Dir, name)
		coi, err := v.UpCopy(ctx, rel, src, store.UpPublish{Replace: replace, User: h.User, IP: h.IP, Life: time.Duration(h.Life) * time.Second, Meta: publishMeta(wark, h.Lmod)})
		m.remoteUnhold(ctx, v, rel, wark)
		switch {
		case err == nil:
			m.log.Info("upload deduplicated", "volume", "/"+v.VPath, "path", rel, "from", src, "how", "server-side copy", "size", h.Size, "user", h.User, "ip", h.IP)
			return Reply{Name: name, Dir: h.Dir, Size: h.Size, Lmod: h.Lmod, Need: []string{}, Wark: wark, Sparse: true, Info: store.ObjectFileInfo(coi)}, true, nil
		case errors.Is(err, store.ErrExists):
			continue // taken meanwhile: choose again
		case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrNoCopy):
			return Reply{}, false, nil
		default:
			return Reply{}, false, err
		}
	}
	return Reply{}, false, nil
}
