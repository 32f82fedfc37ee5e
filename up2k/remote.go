package up2k

// up2k on a volume whose files are objects in an object store (store's
// s3= flag; docs/s3.md, "up2k on S3"). Nothing of such an upload lives on
// a node: its session is the object <wark>/session.json in the volume's
// session area (store.Volume.UpPut…), each verified chunk is the object
// <wark>/c/<key> (its own receipt: it exists only once its bytes matched
// their hash), and the file is published by joining the chunk objects
// no-clobber. So any node can take any handshake or chunk, and a node
// may die at any instant: what it had acknowledged is in the bucket, what
// it had not is not.

import (
	"bytes"
	"context"
	"crypto/sha512"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"hoard/store"
)

// remoteRec is a session object: the record of a local session, plus
// where the file was published once it was (Final), kept until the
// session expires so that a client's last handshake finds its file.
type remoteRec struct {
	record
	Final string `json:"final,omitempty"`
	// Upload is the id of the file's multipart upload, whose parts
	// stitched posts go straight into (remoteparts.go); "" while none.
	Upload string `json:"upload,omitempty"`
}

// maxSessionObject bounds a session object's size (4096 hashes of at
// most 88 characters, and the rest).
const maxSessionObject = 1 << 20

func sessionObject(wark string) string { return wark + "/session.json" }
func chunkPrefix(wark string) string   { return wark + "/c/" }
func chunkObject(wark, key string) string {
	return chunkPrefix(wark) + key
}

// remoteCache keeps, per node, the tables of sessions it has seen: a
// session's chunk hashes, size and chunk size follow from its wark, so a
// cached table is never stale (who published the file is read afresh).
type remoteCache struct {
	mu  sync.Mutex
	m   map[string]*remoteSess
	fin map[string]*finCall // publishes in progress (remoteFinish)
	// busy are the chunks a post on this node is writing, by volume,
	// wark and chunk key (claimBusy).
	busy map[string]bool
}

// claimBusy marks the chunks us of the session rs as being written by
// the caller on this node, refusing, as on disk, a chunk another
// request here is writing. Nodes share no such claim: two posts of one
// chunk on two nodes at once both store it, the same bytes (docs/s3.md).
func (c *remoteCache) claimBusy(v *store.Volume, rs *remoteSess, us []int) (release func(), err error) {
	t := rs.t
	keys := make([]string, len(us))
	for i, u := range us {
		keys[i] = v.VPath + "\x00" + rs.rec.Wark + "\x00" + t.key(u)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, u := range us {
		if c.busy[keys[i]] {
			return nil, invalidf("that chunk is already being written to:\n  %s\n  %s %d/%d\n  %s", rs.rec.Wark, t.sentOf(u), t.firstChunk(u), t.n, rs.rec.Name)
		}
	}
	if c.busy == nil {
		c.busy = map[string]bool{}
	}
	for _, k := range keys {
		c.busy[k] = true
	}
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, k := range keys {
			delete(c.busy, k)
		}
	}, nil
}

type remoteSess struct {
	rec remoteRec
	t   *table
}

const remoteCacheMax = 256

func (c *remoteCache) get(v *store.Volume, wark string) *remoteSess {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[v.VPath+"\x00"+wark]
}

func (c *remoteCache) put(v *store.Volume, wark string, s *remoteSess) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= remoteCacheMax {
		c.m = map[string]*remoteSess{}
	}
	c.m[v.VPath+"\x00"+wark] = s
}

func (c *remoteCache) drop(v *store.Volume, wark string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, v.VPath+"\x00"+wark)
}

// loadRemote reads the session object of wark; ok is false when there is
// none.
func (m *Manager) loadRemote(ctx context.Context, v *store.Volume, wark string) (*remoteSess, bool, error) {
	b, _, err := v.UpGet(ctx, sessionObject(wark), maxSessionObject)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	rs, err := decodeRemote(wark, b)
	if err != nil {
		return nil, false, err
	}
	return rs, true, nil
}

// decodeRemote reads a session object, which another S3 client may have
// written: anything that is not a consistent session of wark, with a
// folder, name and final path hoard could have chosen, is refused.
func decodeRemote(wark string, b []byte) (*remoteSess, error) {
	var rs remoteSess
	bad := func(why string) error { return fmt.Errorf("up2k: session object %s: %s", wark, why) }
	if err := json.Unmarshal(b, &rs.rec); err != nil {
		return nil, bad(err.Error())
	}
	rec := rs.rec
	if rec.Wark != wark {
		return nil, bad("it names the wark " + strconv.Quote(clip(rec.Wark)))
	}
	if d, err := cleanDir(rec.Dir); err != nil || d != rec.Dir {
		return nil, bad("bad folder")
	}
	for _, n := range []string{rec.Name, rec.Asked} {
		if store.CheckName(n) != nil || strings.HasSuffix(n, store.PartialSuffix) || strings.EqualFold(n, store.HistName) {
			return nil, bad("bad name")
		}
	}
	if f := rec.Final; f != "" {
		d, err := cleanDir(path.Dir(f))
		if n := path.Base(f); err != nil || d != path.Dir(f) || store.CheckName(n) != nil || strings.HasSuffix(n, store.PartialSuffix) || strings.EqualFold(n, store.HistName) {
			return nil, bad("bad final path")
		}
	}
	if rec.Size <= 0 || rec.Size > MaxSize {
		return nil, bad("bad size")
	}
	if err := checkUploadID(rs.rec.Upload); err != nil {
		return nil, bad(err.Error())
	}
	for _, h := range rec.Hashes {
		if _, _, err := ParseHash(h); err != nil {
			return nil, bad("bad chunk hash")
		}
	}
	var err error
	if rs.t, err = newTable(rec.Size, rec.CS, rec.Hashes); err != nil {
		return nil, bad(err.Error())
	}
	return &rs, nil
}

// putRemote writes the session object; noClobber fails with
// store.ErrExists when another node made it first.
func putRemote(ctx context.Context, v *store.Volume, rec remoteRec, noClobber bool) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = v.UpPut(ctx, sessionObject(rec.Wark), bytes.NewReader(b), int64(len(b)), noClobber)
	return err
}

// putRemoteIf writes the session object while it is still the version
// etag (store.ErrExists when another node changed it), and returns the
// new version's.
func putRemoteIf(ctx context.Context, v *store.Volume, rec remoteRec, etag string) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return v.UpPutIf(ctx, sessionObject(rec.Wark), b, etag)
}

// remoteHave lists the chunk keys stored for wark.
func remoteHave(ctx context.Context, v *store.Volume, wark string) (map[string]bool, time.Time, error) {
	have := map[string]bool{}
	var last time.Time
	pre := chunkPrefix(wark)
	err := v.UpWalk(ctx, pre, func(oi store.ObjectInfo) error {
		have[strings.TrimPrefix(oi.Key, pre)] = true
		if oi.ModTime.After(last) {
			last = oi.ModTime
		}
		return nil
	})
	return have, last, err
}

func (rs *remoteSess) need(have map[string]bool) []string {
	out := []string{}
	for u := 0; u < rs.t.nu; u++ {
		if !have[rs.t.key(u)] {
			out = append(out, rs.t.sentOf(u))
		}
	}
	return out
}

// remoteHandshake is Handshake on an object-store volume (h checked and
// normalised by Handshake; cs and wark derived).
func (m *Manager) remoteHandshake(ctx context.Context, h Handshake, cs int64, wark string) (Reply, error) {
	if err := h.Vol.CheckSize(h.Size); err != nil {
		return Reply{}, err
	}
	for range 4 {
		rs, ok, err := m.loadRemote(ctx, h.Vol, wark)
		if err != nil {
			return Reply{}, err
		}
		if !ok {
			rep, again, err := m.remoteStart(ctx, h, cs, wark)
			if again {
				continue
			}
			return rep, err
		}
		rec := rs.rec
		same := rec.Dir == h.Dir && (rec.Name == h.Name || rec.Asked == h.Name)
		if rec.Final != "" {
			if same {
				if rep, ok, err := m.remoteDone(ctx, h, rs); ok || err != nil {
					return rep, err
				}
			} else if rep, ok, err := m.remoteExisting(ctx, h, wark, rec.Final); ok || err != nil { // remotedupe.go
				return rep, err
			}
			// Published elsewhere, or since gone: that record is only a
			// hint for its own client; this is a new upload.
			if err := h.Vol.UpDelete(ctx, sessionObject(wark)); err != nil {
				return Reply{}, err
			}
			continue
		}
		if !same {
			where := urlPath(h.Vol, path.Join(rec.Dir, rec.Name))
			if !h.MayRead && (rec.User != h.User || rec.IP != h.IP) {
				where = "(elsewhere)"
			}
			return Reply{}, &Error{Kind: Retry, Msg: "partial upload exists at a different location; please resume uploading here instead:\n" + where + " "}
		}
		m.remote.put(h.Vol, wark, rs)
		// Published already, though the session object does not say so
		// (its publisher died between the two, or a slower one of two
		// publishers overwrote it): say so now.
		if oi, err := h.Vol.UpStat(ctx, path.Join(rec.Dir, rec.Name)); err == nil && oi.Meta["hoard-wark"] == wark {
			m.remoteUnhold(ctx, h.Vol, path.Join(rec.Dir, rec.Name), wark) // remotename.go
			rs.rec.Final = path.Join(rec.Dir, rec.Name)
			if err := putRemote(ctx, h.Vol, rs.rec, false); err != nil {
				return Reply{}, err
			}
			m.remoteUnmark(ctx, h.Vol, rec.IP, wark) // remotecaps.go
			m.remote.drop(h.Vol, wark)
			m.dropChunks(ctx, h.Vol, wark)
			continue
		}
		st, err := loadState(ctx, h.Vol, rs)
		if err != nil {
			return Reply{}, err
		}
		need := rs.need(st.had(rs.t))
		if len(need) == 0 {
			// Every chunk is in, but nobody published the file (its
			// node died): publish it now.
			if _, err := m.remoteFinish(ctx, h.Vol, wark); err != nil && !errors.Is(err, errRestaged) && !errors.Is(err, errNotAllIn) {
				return Reply{}, err
			}
			continue
		}
		return Reply{Name: rec.Name, Dir: rec.Dir, Size: rec.Size, Lmod: rec.Lmod, Need: need, Wark: wark, Sparse: true}, nil
	}
	return Reply{}, &Error{Kind: Unavailable, Msg: "the upload changed under this handshake several times; try again", RetryAfter: time.Second}
}

// remoteDone answers a handshake for a published upload, when its file
// is still there with this content (its mtime set with umod).
func (m *Manager) remoteDone(ctx context.Context, h Handshake, rs *remoteSess) (Reply, bool, error) {
	oi, err := h.Vol.UpStat(ctx, rs.rec.Final)
	if err != nil || oi.Meta["hoard-wark"] != rs.rec.Wark {
		return Reply{}, false, nil
	}
	rep, err := m.remoteHere(ctx, h, rs.rec.Wark, rs.rec.Final, oi) // remotedupe.go
	return rep, err == nil, err
}

// remoteStart makes a new session (or publishes an empty file). again is
// true when another node made the session first: look again.
func (m *Manager) remoteStart(ctx context.Context, h Handshake, cs int64, wark string) (Reply, bool, error) {
	v := h.Vol
	asked := h.Name
	// The same content at the asked name (done), or elsewhere in the
	// volume (refused with nodupe, else copied): remotedupe.go.
	if h.Size > 0 {
		if rep, ok, err := m.remoteExisting(ctx, h, wark, ""); ok || err != nil {
			return rep, false, err
		}
	} else if oi, err := v.UpStat(ctx, path.Join(h.Dir, h.Name)); err == nil && oi.Meta["hoard-wark"] == wark && (h.MayRead || oi.Meta["hoard-uploader"] == h.User && oi.Meta["hoard-ip"] == h.IP) {
		// An empty file's wark is made of its path and mtime.
		return Reply{Name: h.Name, Dir: h.Dir, Size: h.Size, Lmod: h.Lmod, Need: []string{}, Wark: wark, Sparse: true, Info: store.ObjectFileInfo(oi)}, false, nil
	} else if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrIsDir) {
		return Reply{}, false, err
	}
	if h.Rand || v.Flags().Rand {
		h.Name = randomName(v.Flags().NRand, h.Name)
	}
	replace, err := m.remoteReplace(ctx, h)
	if err != nil {
		return Reply{}, false, err
	}
	if h.Size == 0 {
		// Published at once, at a name no other upload holds
		// (remotename.go): held for the moment of the publish.
		name, err := m.freeName(ctx, v, h.Dir, h.Name, h.IP, replace, wark)
		if err != nil {
			return Reply{}, false, err
		}
		rel := path.Join(h.Dir, name)
		eoi, err := v.UpCompose(ctx, rel, nil, store.UpPublish{Replace: replace, User: h.User, IP: h.IP, Life: time.Duration(h.Life) * time.Second, Meta: publishMeta(wark, h.Lmod)})
		m.remoteUnhold(ctx, v, rel, wark)
		if errors.Is(err, store.ErrExists) {
			return Reply{}, true, nil // taken meanwhile: choose again
		}
		if err != nil {
			return Reply{}, false, err
		}
		m.log.Info("upload finished", "volume", "/"+v.VPath, "path", rel, "size", 0, "user", h.User, "ip", h.IP)
		return Reply{Name: name, Dir: h.Dir, Lmod: h.Lmod, Need: []string{}, Wark: wark, Sparse: true, Info: store.ObjectFileInfo(eoi)}, false, nil
	}
	// The caps on unfinished uploads, counted in the bucket (remotecaps.go).
	key, err := m.remoteTakePlace(ctx, v, h.IP, wark)
	if err != nil {
		return Reply{}, false, err
	}
	// The name, held for the session in the bucket until the file is
	// published or the session dropped (remotename.go): a second upload
	// of other content to it, through any node, gets a collision name now.
	name, err := m.freeName(ctx, v, h.Dir, h.Name, h.IP, replace, wark)
	if err != nil {
		m.remoteUnmark(ctx, v, h.IP, wark)
		return Reply{}, false, err
	}
	rel := path.Join(h.Dir, name)
	rec := remoteRec{record: record{
		Wark: wark, Dir: h.Dir, Name: name, Asked: asked, Size: h.Size, Lmod: h.Lmod, CS: cs,
		Hashes: h.Hashes, Created: m.now().UnixNano(), Life: h.Life, Replace: replace, User: h.User, IP: h.IP,
	}}
	t, err := newTable(h.Size, cs, h.Hashes)
	if err != nil {
		m.remoteUnmark(ctx, v, h.IP, wark)
		m.remoteUnhold(ctx, v, rel, wark)
		return Reply{}, false, err
	}
	if err := putRemote(ctx, v, rec, true); errors.Is(err, store.ErrExists) {
		// Another node made it: resume that one (its mark is its own;
		// so is the name when it chose the same).
		if other, ok, _ := m.loadRemote(ctx, v, wark); !ok || store.ClientKey(other.rec.IP) != key {
			m.remoteUnmark(ctx, v, h.IP, wark)
		}
		m.remoteUnholdStale(ctx, v, rel, wark)
		return Reply{}, true, nil
	} else if err != nil {
		m.remoteUnmark(ctx, v, h.IP, wark)
		m.remoteUnholdStale(ctx, v, rel, wark)
		return Reply{}, false, err
	}
	rs := &remoteSess{rec: rec, t: t}
	m.remote.put(v, wark, rs)
	m.log.Info("upload started", "volume", "/"+v.VPath, "path", path.Join(h.Dir, name), "size", h.Size, "chunks", len(h.Hashes), "wark", wark, "user", h.User, "ip", h.IP, "store", "object")
	return Reply{Name: name, Dir: h.Dir, Size: h.Size, Lmod: h.Lmod, Need: rs.need(nil), Wark: wark, Sparse: true}, false, nil
}

// remoteReplace is decideReplace on an object-store volume.
func (m *Manager) remoteReplace(ctx context.Context, h Handshake) (bool, error) {
	if h.Replace == "" {
		return false, nil
	}
	oi, err := h.Vol.UpStat(ctx, path.Join(h.Dir, h.Name))
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrIsDir) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	switch h.Replace {
	case "skip":
		return false, &Error{Kind: Conflict, Msg: "upload rejected, a file with that name already exists"}
	case "mt":
		mt := oi.ModTime.Unix()
		if l, err := strconv.ParseInt(oi.Meta["hoard-lmod"], 10, 64); err == nil {
			mt = l
		}
		return h.Lmod >= mt, nil
	}
	return true, nil
}

// publishMeta is what a published upload carries besides its uploader:
// its wark (to know it again) and the client's mtime (S3 keeps its own).
func publishMeta(wark string, lmod int64) map[string]string {
	return map[string]string{"hoard-wark": wark, "hoard-lmod": strconv.FormatInt(lmod, 10)}
}

// remoteChunks is WriteChunks on an object-store volume: each chunk of
// the post streams through SHA-512 into its own object, which completes
// only when the hash matched (checkReader holds the last bytes back until
// then), so a chunk object is its own receipt. When every chunk is in,
// the file is published before the reply.
func (m *Manager) remoteChunks(ctx context.Context, p ChunkPost, hl HashList) (Written, error) {
	v := p.Vol
	rs := m.remote.get(v, p.Wark)
	if rs == nil {
		var ok bool
		var err error
		rs, ok, err = m.loadRemote(ctx, v, p.Wark)
		if err != nil {
			return Written{}, err
		}
		if !ok || rs.rec.Final != "" {
			return Written{}, invalidf("unknown wark (see serverlog for details)")
		}
		m.remote.put(v, p.Wark, rs)
	}
	t := rs.t
	us, err := t.resolve(hl, rs.rec.Name)
	if err != nil {
		return Written{}, err
	}
	if p.Subc >= 0 {
		return m.remoteSubchunk(ctx, p, rs, us, hl.First)
	}
	var want int64
	for _, u := range us {
		want += t.length(u)
	}
	switch {
	case p.Length > want:
		return Written{}, invalidf("your client is sending %d bytes which is too much (server expected %d bytes at most)", p.Length, want)
	case p.Length >= 0 && p.Length < want:
		return Written{}, invalidf("your client is sending %d bytes, but the %d chunks named in X-Up2k-Hash are %d bytes", p.Length, len(us), want)
	}
	// As on disk: a chunk stored already is refused (clients take this
	// answer as success). Two posts of one chunk at once, on two nodes,
	// both store it; the bytes are the same.
	st, err := loadState(ctx, v, rs)
	if err != nil {
		return Written{}, err
	}
	had := st.had(t)
	for _, u := range us {
		if had[t.key(u)] {
			return Written{}, invalidf("already got that (%s) but thanks??", t.sentOf(u))
		}
	}
	release, err := m.remote.claimBusy(v, rs, us)
	if err != nil {
		return Written{}, err
	}
	defer release()
	m.posts.Add(1)
	defer m.posts.Add(-1)
	w, rs, err := m.remotePost(ctx, p, rs, us)
	if err != nil {
		return w, err
	}
	// The body is in and stored: what follows must not depend on the
	// client, which may have half-closed its connection once it sent the
	// body (net/http then cancels the request's context).
	ctx = context.WithoutCancel(ctx)
	return m.remoteMaybeFinish(ctx, v, rs, w)
}

// remoteMaybeFinish publishes the upload when every chunk is in.
func (m *Manager) remoteMaybeFinish(ctx context.Context, v *store.Volume, rs *remoteSess, w Written) (Written, error) {
	st, err := loadState(ctx, v, rs)
	if err != nil {
		return w, err
	}
	if len(rs.need(st.had(rs.t))) > 0 {
		return w, nil
	}
	rel, err := m.remoteFinish(ctx, v, rs.rec.Wark)
	if errors.Is(err, errRestaged) || errors.Is(err, errNotAllIn) {
		return w, nil // the chunks are in; the client's handshake learns what else is needed
	}
	if err != nil {
		return w, err
	}
	w.Done, w.Rel = true, rel
	return w, nil
}

// A chunk sent in sub-chunks (X-Up2k-Subc, u2c's pieces of at most
// --szm) on an object-store volume: each piece is the session object
// <wark>/p/<key>/<offset>, and once stored, <…>.h holds the SHA-512
// state after it (encoding.BinaryMarshaler), so the next piece may go to
// any node: it continues the hash from there. The last piece passes
// through a checkReader seeded with that state, so it is stored only when
// the whole chunk matched; then the pieces are joined into the chunk
// object (server-side where S3 allows) and deleted.
func pieceDir(wark, key string) string { return wark + "/p/" + key + "/" }
func pieceName(wark, key string, off int64) string {
	return fmt.Sprintf("%s%020d", pieceDir(wark, key), off)
}

// maxHashState bounds a stored SHA-512 state.
const maxHashState = 1 << 10

func (m *Manager) remoteSubchunk(ctx context.Context, p ChunkPost, rs *remoteSess, us []int, first string) (Written, error) {
	v, t := p.Vol, rs.t
	if len(us) != 1 {
		return Written{}, invalidf("subchunk protocol error; resetting chunk [%s]: only a single subchunk can be uploaded in one request; you are sending %d chunks", first, len(us))
	}
	u := us[0]
	cl, key := t.length(u), t.key(u)
	switch {
	case p.Length <= 0:
		return Written{}, invalidf("subchunk protocol error; resetting chunk [%s]: a subchunk needs a Content-Length above 0", first)
	case p.Subc+p.Length > cl:
		return Written{}, invalidf("subchunk protocol error; resetting chunk [%s]: subchunk offset (%d) plus postsize (%d) exceeds chunksize (%d)", first, p.Subc, p.Length, cl)
	}
	if got, err := v.UpHas(ctx, chunkObject(p.Wark, key)); err != nil {
		return Written{}, err
	} else if got {
		return Written{}, invalidf("already got that (%s) but thanks??", t.sentOf(u))
	}
	release, err := m.remote.claimBusy(v, rs, us)
	if err != nil {
		return Written{}, err
	}
	defer release()
	// The pieces stored so far, in order, with their ends.
	type piece struct {
		name       string
		start, end int64
	}
	var pieces []piece
	dir := pieceDir(p.Wark, key)
	states := map[string]bool{}
	err = v.UpWalk(ctx, dir, func(oi store.ObjectInfo) error {
		rest := strings.TrimPrefix(oi.Key, dir)
		if base, ok := strings.CutSuffix(rest, ".h"); ok {
			states[base] = true
			return nil
		}
		off, err := strconv.ParseInt(rest, 10, 64)
		if err != nil || len(rest) != 20 {
			return nil // not hoard's
		}
		pieces = append(pieces, piece{name: oi.Key, start: off, end: off + oi.Size})
		return nil
	})
	if err != nil {
		return Written{}, err
	}
	// The run of whole pieces from 0 (each with its state) ends at next.
	var run []piece
	next := int64(0)
	for _, pc := range pieces {
		if pc.start != next || !states[strings.TrimPrefix(pc.name, dir)] {
			break
		}
		run = append(run, pc)
		next = pc.end
	}
	reset := func() {
		for _, pc := range pieces {
			v.UpDelete(ctx, pc.name)
			v.UpDelete(ctx, pc.name+".h")
		}
	}
	h := sha512.New()
	switch {
	case p.Subc == 0:
		reset() // a chunk starts over
		run = nil
	case p.Subc != next:
		reset()
		return Written{}, invalidf("subchunk protocol error; resetting chunk [%s]: the expected resume-point was %d, not %d", first, next, p.Subc)
	default:
		st, _, err := v.UpGet(ctx, run[len(run)-1].name+".h", maxHashState)
		if err == nil {
			err = h.(encoding.BinaryUnmarshaler).UnmarshalBinary(st)
		}
		if err != nil {
			return Written{}, err
		}
	}
	name := pieceName(p.Wark, key, p.Subc)
	last := p.Subc+p.Length == cl
	var w Written
	if !last {
		hr := &hashReader{r: io.LimitReader(p.Body, p.Length), h: h, want: p.Length}
		_, err := v.UpPut(ctx, name, hr, p.Length, false)
		n, hrErr := hr.result()
		w.Bytes = n
		if hrErr != nil { // the body's own fault wins: the put was aborted for it
			return w, hrErr
		}
		if err != nil {
			return w, err
		}
		ctx = context.WithoutCancel(ctx) // the piece is in: its hash state follows, whatever the client does
		st, err := hr.state()
		if err == nil {
			_, err = v.UpPut(ctx, name+".h", bytes.NewReader(st), int64(len(st)), false)
		}
		return w, err // a middle piece: thank, but not yet confirmed
	}
	cr := newCheckReader(p.Body, p.Length, t.sentOf(u), t.cmp(u))
	cr.h = h
	_, err = v.UpPut(ctx, name, cr, p.Length, false)
	got, bad, crErr := cr.result()
	w.Bytes = got
	if crErr != nil {
		if bad {
			m.badChunks.Add(1)
			reset()
			v.UpDelete(ctx, name)
		}
		return w, crErr
	}
	if err != nil {
		return w, err
	}
	ctx = context.WithoutCancel(ctx) // the chunk is in: joining it does not depend on the client
	parts := make([]string, 0, len(run)+1)
	for _, pc := range run {
		parts = append(parts, pc.name)
	}
	parts = append(parts, name)
	if err := v.UpJoin(ctx, chunkObject(p.Wark, key), parts); err != nil {
		return w, err
	}
	for _, pn := range parts {
		v.UpDelete(ctx, pn)
		v.UpDelete(ctx, pn+".h")
	}
	w.Chunks = 1
	return m.remoteMaybeFinish(ctx, v, rs, w)
}

// hashReader hashes the want bytes read through it; a body that ends
// or fails before them is its err (a short body, the client's fault).
type hashReader struct {
	mu      sync.Mutex // see checkReader
	r       io.Reader
	h       hash.Hash
	n, want int64
	err     error
}

// result is what the reader saw so far (see checkReader.result).
func (r *hashReader) result() (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n, r.err
}

// state is the hash's state after what was read.
func (r *hashReader) state() ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.h.(encoding.BinaryMarshaler).MarshalBinary()
}

func (r *hashReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	failed := r.err
	r.mu.Unlock()
	if failed != nil {
		return 0, failed
	}
	k, err := r.r.Read(p) // unlocked: it may wait for the client
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Write(p[:k])
	r.n += int64(k)
	if errors.Is(err, io.EOF) && r.n < r.want || err != nil && !errors.Is(err, io.EOF) {
		r.err = fmt.Errorf("%w: after %d of the subchunk's %d bytes: %v", store.ErrShortBody, r.n, r.want, err)
		return 0, r.err
	}
	return k, err
}

// remoteFinish publishes the upload wark, whose chunks are all in: the
// chunk objects joined in file order (re-hashed where they pass through
// this node), no-clobber at the session's name (or, when another file
// took it meanwhile, a collision name); then the session object says
// where, and the chunk objects go. Two nodes finishing at once agree: the
// loser finds the file with its wark at the name and takes it as done.
func (m *Manager) remoteFinish(ctx context.Context, v *store.Volume, wark string) (string, error) {
	wait := ctx
	ctx = context.WithoutCancel(ctx) // a client gone mid-publish must not leave it half done
	// One publish per upload on this node: posts that complete it at
	// once wait for the first one's outcome — or until their own client
	// is gone (the publish runs under the store's caps, so it ends too).
	k := v.VPath + "\x00" + wark
	m.remote.mu.Lock()
	if c := m.remote.fin[k]; c != nil {
		m.remote.mu.Unlock()
		select {
		case <-c.done:
		case <-wait.Done():
			return "", wait.Err()
		}
		return c.rel, c.err
	}
	c := &finCall{done: make(chan struct{})}
	if m.remote.fin == nil {
		m.remote.fin = map[string]*finCall{}
	}
	m.remote.fin[k] = c
	m.remote.mu.Unlock()
	c.rel, c.err = m.remotePublish(ctx, v, wark)
	m.remote.mu.Lock()
	delete(m.remote.fin, k)
	m.remote.mu.Unlock()
	close(c.done)
	return c.rel, c.err
}

// finCall is a publish in progress on this node.
type finCall struct {
	done chan struct{}
	rel  string
	err  error
}

// remotePublish is remoteFinish's work.
func (m *Manager) remotePublish(ctx context.Context, v *store.Volume, wark string) (string, error) {
	var rs *remoteSess
	var rec remoteRec
	published := func(rel string) bool {
		oi, err := v.UpStat(ctx, rel)
		return err == nil && oi.Meta["hoard-wark"] == wark
	}
	for attempt := 0; ; attempt++ {
		var etag string
		var ok bool
		var err error
		rs, etag, ok, err = m.loadRemoteTag(ctx, v, wark)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", invalidf("unknown wark (see serverlog for details)")
		}
		rec = rs.rec
		if rec.Final != "" {
			return rec.Final, nil
		}
		if !published(path.Join(rec.Dir, rec.Name)) {
			// Touch the session object: an expiry on any node measures
			// idleness from here, and aborts this publish's multipart
			// upload only when it was begun long ago. (Another node
			// publishing at the same moment may have its record of
			// where overwritten; a handshake finds the file and says so
			// again.) If-Match: a session another node changed
			// meanwhile (its upload begun, or moved) is read again.
			err := putRemoteIf(ctx, v, rec, etag)
			if errors.Is(err, store.ErrExists) && attempt < 4 {
				continue
			}
			if err != nil {
				return "", err
			}
			if rs, etag, ok, err = m.loadRemoteTag(ctx, v, wark); err != nil || !ok {
				return "", cmpErr(err, invalidf("unknown wark (see serverlog for details)"))
			}
		}
		if rec.Upload != "" {
			rel, err := m.remotePublishParts(ctx, v, rs, etag)
			if err != nil {
				return "", err
			}
			return m.published(ctx, v, rec, rel)
		}
		break
	}
	t := rs.t
	parts := make([]string, t.n)
	for i := range parts {
		parts[i] = chunkObject(wark, t.keyOfChunk(i))
	}
	check := func(i int, r io.Reader) io.Reader {
		u, _ := t.lookup(t.keyOfChunk(i))
		return newCheckReader(r, t.length(u), t.sentOf(u), t.cmp(u))
	}
	name := rec.Name
	var rel string
	for attempt := 0; ; attempt++ {
		rel = path.Join(rec.Dir, name)
		_, err := v.UpCompose(ctx, rel, parts, store.UpPublish{Replace: rec.Replace, User: rec.User, IP: rec.IP, Life: time.Duration(rec.Life) * time.Second, Meta: publishMeta(wark, rec.Lmod), Check: check, Chunks: rec.Hashes})
		if err == nil || published(rel) {
			break // published, by this node or by another at once
		}
		if name != rec.Name {
			m.remoteUnhold(ctx, v, rel, wark) // a collision name held for this publish (below)
		}
		if !errors.Is(err, store.ErrExists) || attempt >= 4 {
			m.log.Warn("could not publish an upload", "volume", "/"+v.VPath, "path", rel, "wark", wark, "err", err)
			return "", err
		}
		// Another file took the name (a PUT, or another S3 client: up2k
		// uploads respect the session's hold): a collision name that no
		// upload holds, held until published.
		if name, err = m.freeName(ctx, v, rec.Dir, rec.Name, rec.IP, false, wark); err != nil {
			return "", err
		}
	}
	return m.published(ctx, v, rec, rel)
}

// published records where the upload rec went (Final) and drops its
// chunk objects.
func (m *Manager) published(ctx context.Context, v *store.Volume, rec remoteRec, rel string) (string, error) {
	// The file has its name: the holds go before the session says where
	// (remotename.go: a hold whose session is published is stale anyway).
	m.remoteUnhold(ctx, v, path.Join(rec.Dir, rec.Name), rec.Wark)
	if rel != path.Join(rec.Dir, rec.Name) {
		m.remoteUnhold(ctx, v, rel, rec.Wark)
	}
	rec.Final = rel
	if err := putRemote(ctx, v, rec, false); err != nil {
		return "", err
	}
	m.remoteUnmark(ctx, v, rec.IP, rec.Wark) // remotecaps.go: its place is free
	m.remote.drop(v, rec.Wark)
	m.dropChunks(ctx, v, rec.Wark)
	m.finished.Add(1)
	m.log.Info("upload finished", "volume", "/"+v.VPath, "path", rel, "size", rec.Size, "user", rec.User, "ip", rec.IP, "store", "object")
	return rel, nil
}

// cmpErr is err, or alt when err is nil.
func cmpErr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}

// dropChunks deletes the chunk objects (and any sub-chunk pieces) of the
// published upload wark, keeping its session object; what it cannot
// delete is left for the expiry.
func (m *Manager) dropChunks(ctx context.Context, v *store.Volume, wark string) {
	var names []string
	err := v.UpWalk(ctx, wark+"/", func(oi store.ObjectInfo) error {
		if oi.Key != sessionObject(wark) {
			names = append(names, oi.Key)
		}
		return nil
	})
	if err == nil {
		for _, n := range names {
			if err = v.UpDelete(ctx, n); err != nil {
				break
			}
		}
	}
	if err != nil {
		m.log.Warn("could not delete an upload's chunk objects", "volume", "/"+v.VPath, "wark", wark, "err", err)
	}
}

// expireRemote deletes the sessions of object-store volumes whose newest
// object is older than the idle time (--snap-drop), with their chunk
// objects and any multipart upload a node left unfinished while it
// published them. Every node runs it; deletes are idempotent.
func (m *Manager) expireRemote(ctx context.Context) int {
	n := 0
	now := m.now()
	for v := range *m.dbs.Load() {
		if !v.Remote() {
			continue
		}
		type sess struct {
			last time.Time
			objs []string
		}
		all := map[string]*sess{}
		var order []string
		err := v.UpWalk(ctx, "", func(oi store.ObjectInfo) error {
			wark, _, _ := strings.Cut(oi.Key, "/")
			s := all[wark]
			if s == nil {
				s = &sess{}
				all[wark] = s
				order = append(order, wark)
			}
			s.objs = append(s.objs, oi.Key)
			if oi.ModTime.After(s.last) {
				s.last = oi.ModTime
			}
			return nil
		})
		if err != nil {
			m.log.Warn("could not list the upload sessions of an object-store volume", "volume", "/"+v.VPath, "err", err)
			continue
		}
		// Before any session goes: while its record is there, an upload
		// at its file that it does not name is its dead node's.
		m.sweepOrphans(ctx, v, order)
		dropped := map[string]bool{}
		for _, wark := range order {
			s := all[wark]
			if now.Sub(s.last) < m.idle {
				continue
			}
			rs, ok, err := m.loadRemote(ctx, v, wark)
			if err == nil && ok && rs.rec.Upload != "" {
				// Its parts count as its objects: an upload whose posts
				// all go into parts is busy though its objects are old.
				st, err := loadState(ctx, v, rs)
				if err != nil || now.Sub(st.last) < m.idle {
					continue
				}
				if rs.rec.Final == "" {
					if err := v.UpAbortUpload(ctx, path.Join(rs.rec.Dir, rs.rec.Name), rs.rec.Upload); err != nil {
						m.log.Warn("could not abort an abandoned upload", "volume", "/"+v.VPath, "wark", wark, "err", err)
						continue
					}
				}
			}
			if err == nil && ok && rs.rec.Final == "" {
				// A publish begins within moments of the session
				// object's touch; one begun before that ended with its
				// node.
				if err := v.UpAbort(ctx, path.Join(rs.rec.Dir, rs.rec.Name), s.last.Add(m.moments())); err != nil {
					m.log.Warn("could not abort an abandoned upload", "volume", "/"+v.VPath, "wark", wark, "err", err)
				}
			}
			for _, o := range s.objs {
				if err = v.UpDelete(ctx, o); err != nil {
					break
				}
			}
			m.remote.drop(v, wark)
			if err != nil {
				m.log.Warn("could not delete an abandoned upload", "volume", "/"+v.VPath, "wark", wark, "err", err)
				continue
			}
			n++
			dropped[wark] = true
			m.log.Info("upload dropped", "volume", "/"+v.VPath, "wark", wark, "why", fmt.Sprintf("idle for more than %v", m.idle), "store", "object")
		}
		// The names held by sessions gone or dropped now (remotename.go).
		m.sweepHolds(ctx, v, func(w string) bool { return all[w] != nil && !dropped[w] })
		// The caps' marks (remotecaps.go) of sessions gone or dropped
		// now; a mark is written just before its session, so a young
		// one stays.
		if k, err := v.UpSweepMarks(ctx, now.Add(-m.moments()), func(w string) bool {
			s, ok := all[w]
			return ok && now.Sub(s.last) < m.idle
		}); err != nil {
			m.log.Warn("could not sweep the marks of unfinished uploads", "volume", "/"+v.VPath, "err", err)
		} else if k > 0 {
			m.rcaps.adjust(v, -k)
		}
	}
	return n
}

// checkReader passes exactly n bytes of r through SHA-512 and holds the
// last of them back until the digest matched cmp: a reader of it (an
// object store's PUT) never sees the whole chunk unless it is intact, so
// a chunk that fails leaves no object. err is the reader's own failure.
//
// Read runs on the object store client's goroutine, which may go on
// reading after the Put returned (net/http's transport closes a request
// body in its own time): the caller reads the outcome with result, and
// the fields are guarded by mu, never held across the body's own Read.
type checkReader struct {
	mu        sync.Mutex
	r         io.Reader
	n, got    int64
	sent, cmp string
	h         hash.Hash
	err       error
	bad       bool // the bytes did not match
}

func newCheckReader(r io.Reader, n int64, sent, cmp string) *checkReader {
	return &checkReader{r: r, n: n, sent: sent, cmp: cmp, h: sha512.New()}
}

// result is the bytes read, whether they failed the digest, and the
// reader's own failure, so far.
func (c *checkReader) result() (got int64, bad bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.got, c.bad, c.err
}

func (c *checkReader) Read(p []byte) (int, error) {
	c.mu.Lock()
	failed, rem := c.err, c.n-c.got
	c.mu.Unlock()
	if failed != nil {
		return 0, failed
	}
	if rem == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) < rem {
		k, err := c.r.Read(p) // unlocked: it may wait for the client
		c.mu.Lock()
		defer c.mu.Unlock()
		c.got += int64(k)
		c.h.Write(p[:k])
		if errors.Is(err, io.EOF) {
			if k > 0 {
				return k, nil // the next read says it
			}
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			c.err = fmt.Errorf("%w: after %d of the chunk's %d bytes: %w", store.ErrShortBody, c.got, c.n, err)
			return 0, c.err
		}
		return k, nil
	}
	// This read ends the chunk: read the rest, then judge it.
	k, err := io.ReadFull(c.r, p[:rem])
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got += int64(k)
	c.h.Write(p[:k])
	if err != nil {
		c.err = fmt.Errorf("%w: after %d of the chunk's %d bytes: %w", store.ErrShortBody, c.got, c.n, err)
		return 0, c.err
	}
	enc := b64.EncodeToString(c.h.Sum(nil))
	if !strings.HasPrefix(enc, c.cmp) {
		c.bad = true
		c.err = invalidf("your chunk got corrupted somehow (received %d bytes); expected vs received hash:\n%s\n%s", c.got, c.sent, enc[:min(max(len(c.sent), KeyLen), len(enc))])
		return 0, c.err
	}
	return k, nil
}
