package http

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"hoard/store"
	"hoard/up2k"
)

// maxJSON is the largest JSON body a POST may carry (copyparty's limit).
const maxJSON = 1 << 20

// postJSON answers JSON POSTs: up2k handshakes, and searches (a search
// when the URL has ?srch or the body has "q" or "srch").
func (s *Server) postJSON(q *req) error {
	body, err := q.readWhole(maxJSON, "a JSON body")
	if err != nil {
		var he *httpError
		if errors.As(err, &he) && he.code == http.StatusRequestEntityTooLarge {
			return errorf(http.StatusRequestEntityTooLarge, "json 2big: a JSON body may be at most %d bytes", maxJSON)
		}
		return err
	}
	query := q.query
	// The usual handshake's body is read without a map (hsjson.go); a
	// search, and any body that walk cannot take, the general way.
	var hf hsFields
	if !has(query, "srch") && json.Valid(body) && objectFields(body, hf.set) && !hf.search {
		return s.handshake(q, hf.get)
	}
	var fields map[string]json.RawMessage
	jerr := json.Unmarshal(body, &fields)
	_, hasQ := fields["q"]
	_, hasSrch := fields["srch"]
	if has(query, "srch") || hasQ || hasSrch {
		q.route = "search"
		return s.search(q, fields, jerr)
	}
	if jerr != nil || fields == nil {
		if err := notYet(query); err != nil {
			return err
		}
		return errorf(http.StatusBadRequest, "you POSTed %d bytes of invalid json (an up2k handshake is a JSON object)", len(body))
	}
	return s.handshake(q, func(k string) []byte { return fields[k] })
}

// notYet refuses the JSON POSTs this version does not have.
func notYet(query url.Values) error {
	for _, k := range []string{"delete", "share"} {
		if has(query, k) {
			return errorf(http.StatusNotImplemented, "?%s is not available in this version of hoard yet", k)
		}
	}
	return nil
}

// hsFields are the members of a handshake body that handshakeOf reads
// (raw values, nil when absent), and whether it has a search's keys.
type hsFields struct {
	name, size, lmod, hash, replace, rand, umod, life []byte
	search                                            bool
}

// field is the slot of member k, nil for a member handshakeOf does not read.
func (f *hsFields) field(k []byte) *[]byte {
	switch string(k) {
	case "name":
		return &f.name
	case "size":
		return &f.size
	case "lmod":
		return &f.lmod
	case "hash":
		return &f.hash
	case "replace":
		return &f.replace
	case "rand":
		return &f.rand
	case "umod":
		return &f.umod
	case "life":
		return &f.life
	}
	return nil
}

func (f *hsFields) set(k, v []byte) {
	if p := f.field(k); p != nil {
		*p = v
	} else if string(k) == "q" || string(k) == "srch" {
		f.search = true
	}
}

func (f *hsFields) get(k string) []byte {
	if p := f.field([]byte(k)); p != nil {
		return *p
	}
	return nil
}

// handshake answers an up2k handshake whose body's members get returns.
func (s *Server) handshake(q *req, get func(string) []byte) error {
	if err := notYet(q.query); err != nil {
		return err
	}
	if err := s.mayUp2k(q); err != nil {
		return err
	}
	h, err := handshakeOf(get)
	if err != nil {
		return err
	}
	rep, err := s.runHandshake(q, h)
	if err != nil {
		return err
	}
	q.w.Header().Set(up2k.OneShotHeader, "1") // this server takes one-shot posts (postOneShot)
	return writeJSON(q, http.StatusOK, s.hsReplyOf(q, rep))
}

// runHandshake runs handshake h in q's folder, as q's user.
func (s *Server) runHandshake(q *req, h up2k.Handshake) (up2k.Reply, error) {
	h.Vol, h.Dir = q.vol, q.rel
	// From another site's page a handshake has no d (its replace and
	// umod are dropped, as without the permission), whoever asks: see
	// overwriteCheck.
	h.MayDelete = q.perm.Has(store.PermDelete) && s.cop.Check(q.r) == nil
	h.MayRead = q.perm.Has(store.PermRead)
	h.User, h.IP = q.user, q.ip
	return s.up.Handshake(q.r.Context(), h)
}

// hsReplyOf is the JSON answer to a handshake that gave rep.
func (s *Server) hsReplyOf(q *req, rep up2k.Reply) hsReply {
	purl := "/"
	if p := path.Join(q.vol.VPath, rep.Dir); p != "." && p != "" {
		purl = "/" + p + "/"
	}
	purl = q.loc + purl // through the proxy's prefix, as copyparty (u2c posts chunks there)
	out := hsReply{Name: rep.Name, Purl: purl, Size: rep.Size, Lmod: rep.Lmod, Sprs: rep.Sparse, Hash: rep.Need, Dwrk: rep.Wark, Wark: rep.Wark, Need: rep.Need}
	if len(rep.Need) == 0 && rep.Info != nil && q.vol.Flags().FK > 0 && q.perm.Any(store.PermRead|store.PermUpGet) {
		out.FK = q.vol.FileKey(rep.Rel(), rep.Info)
	}
	return out
}

// maxOneShotHeader bounds up2k.OneShotHeader (a name of a few hundred
// bytes, one hash, a few numbers: well under it).
const maxOneShotHeader = 8 << 10

// oneShotOf reads a one-shot POST's handshake (up2k.OneShotHeader) for a
// body of n bytes: the same fields, types and limits as a handshake's
// JSON, and a file of exactly one chunk whose bytes are the body.
func oneShotOf(v string, n int64) (up2k.Handshake, error) {
	if len(v) > maxOneShotHeader {
		return up2k.Handshake{}, errorf(http.StatusRequestHeaderFieldsTooLarge, "%s: at most %d bytes", up2k.OneShotHeader, maxOneShotHeader)
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimSpace(v))
	if err != nil {
		return up2k.Handshake{}, errorf(http.StatusBadRequest, "%s: not base64url without padding", up2k.OneShotHeader)
	}
	var hf hsFields
	if !json.Valid(raw) || !objectFields(raw, hf.set) || hf.search {
		return up2k.Handshake{}, errorf(http.StatusBadRequest, "%s: not a handshake (a JSON object of its fields)", up2k.OneShotHeader)
	}
	h, err := handshakeOf(hf.get)
	if err != nil {
		return h, err
	}
	switch {
	case n < 0:
		return h, errorf(http.StatusLengthRequired, "a one-shot POST needs a Content-Length")
	case h.Size != n:
		return h, errorf(http.StatusBadRequest, "a one-shot POST's body is its file: %d bytes sent for a file of %d", n, h.Size)
	case h.Size <= 0 || h.Size > up2k.OneShotMax || len(h.Hashes) != 1:
		return h, errorf(http.StatusBadRequest, "a one-shot POST carries a file of 1 to %d bytes and one chunk hash (%d bytes, %d hashes)", up2k.OneShotMax, h.Size, len(h.Hashes))
	}
	return h, nil
}

// postOneShot answers a one-shot POST (up2k.OneShotHeader): the
// handshake, then, when the file is needed, its one chunk from the body,
// exactly as the two requests would (same checks, same session, same
// durability: the reply comes after the chunk's synced batch and the
// publish). The answer is the handshake's JSON as it stands after the
// chunk: need is empty once the file is published (up2k.DoneHeader says
// where) or was there already; a chunk the server could not take yet
// (the same content being written elsewhere) leaves it in need, and the
// client goes on with plain handshakes.
func (s *Server) postOneShot(q *req, v string) error {
	if err := s.mayUp2k(q); err != nil {
		return err
	}
	if err := notYet(q.query); err != nil {
		return err
	}
	h, err := oneShotOf(v, q.r.ContentLength)
	if err != nil {
		return err
	}
	rep, err := s.runHandshake(q, h)
	if err != nil {
		return err
	}
	if len(rep.Need) == 1 && rep.Need[0] == h.Hashes[0] {
		w, err := s.up.WriteChunks(q.r.Context(), up2k.ChunkPost{
			Vol: q.vol, Wark: rep.Wark, Hashes: rep.Need[0], Subc: -1,
			Body: newIdleReader(q, q.r.Body), Length: q.r.ContentLength,
		})
		if err != nil {
			return err
		}
		if w.Done {
			s.published(q, w)
			rep.Need = []string{}
		}
	}
	q.w.Header().Set(up2k.OneShotHeader, "1")
	return writeJSON(q, http.StatusOK, s.hsReplyOf(q, rep))
}

// mayUp2k checks what every up2k request needs: up2k on, the right to
// upload here, and not inside a share.
func (s *Server) mayUp2k(q *req) error {
	if s.up == nil {
		return errorf(http.StatusNotImplemented, "up2k uploads are not enabled on this server")
	}
	if err := q.needUpload(); err != nil {
		return err
	}
	if q.share {
		return errShareUp2k
	}
	return nil
}

// published logs a chunk write that published its file and says where in
// the reply (up2k.DoneHeader): a client that reads it needs no final
// handshake. The path is the one that handshake would name, through the
// proxy's prefix, as purl.
func (s *Server) published(q *req, w up2k.Written) {
	s.log.Info("upload", "id", q.id, "path", "/"+path.Join(q.vol.VPath, w.Rel), "via", "up2k", "user", q.acct(), "ip", q.ip)
	q.w.Header().Set(up2k.DoneHeader, q.loc+hrefOf(q.vol, w.Rel))
}

// errShareUp2k refuses up2k inside a share: its sessions, partial files
// and index records belong to a volume, and a share is served through a
// view of one folder (store.Volume.Confine) that they cannot be confined to.
var errShareUp2k = errorf(http.StatusBadRequest, "up2k uploads are not available inside a share; upload with PUT or a multipart POST")

// hsReply is copyparty's handshake answer (in its key order) plus the
// interface description's need (the same list as hash).
type hsReply struct {
	Name string   `json:"name"`
	Purl string   `json:"purl"`
	Size int64    `json:"size"`
	Lmod int64    `json:"lmod"`
	Sprs bool     `json:"sprs"`
	Hash []string `json:"hash"`
	Dwrk string   `json:"dwrk"`
	Wark string   `json:"wark"`
	Need []string `json:"need"`
	FK   string   `json:"fk,omitempty"`
}

// handshakeOf reads a handshake's fields, checking their types.
func handshakeOf(get func(string) []byte) (up2k.Handshake, error) {
	var h up2k.Handshake
	bad := func(field, want string) error {
		return errorf(http.StatusBadRequest, "handshake field %q: want %s, got %.60s", field, want, get(field))
	}
	if v := get("name"); v == nil || jsonString(v, &h.Name) != nil {
		return h, bad("name", "a string")
	}
	raw := bytes.TrimSpace(get("size"))
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return h, bad("size", "an integer number of bytes")
	}
	h.Size = n
	if v := get("lmod"); v != nil {
		t, ok := jsonFloat(v)
		if ok && !math.IsNaN(t) && t > 0 && t < 1<<40 {
			h.Lmod = int64(t) // copyparty truncates; anything else means now
		}
	}
	if v := get("hash"); v != nil && string(bytes.TrimSpace(v)) != "null" {
		if err := jsonStrings(v, &h.Hashes); err != nil {
			return h, bad("hash", "an array of chunk hashes (strings)")
		}
	} else if h.Size != 0 {
		return h, bad("hash", "an array of chunk hashes (strings)")
	}
	if h.Hashes == nil {
		h.Hashes = []string{}
	}
	if v := get("replace"); v != nil {
		var b bool
		var s string
		switch {
		case json.Unmarshal(v, &b) == nil:
			if b {
				h.Replace = "true"
			}
		case json.Unmarshal(v, &s) == nil && (s == "mt" || s == "skip"):
			h.Replace = s
		default:
			return h, bad("replace", `true, false, "mt" or "skip"`)
		}
	}
	for _, k := range []string{"rand", "umod"} {
		v := get(k)
		if v == nil {
			continue
		}
		var b bool
		var n float64
		switch {
		case json.Unmarshal(v, &b) == nil:
		case json.Unmarshal(v, &n) == nil:
			b = n != 0
		default:
			return h, bad(k, "true or false")
		}
		if k == "rand" {
			h.Rand = b
		} else {
			h.Umod = b
		}
	}
	if v := get("life"); v != nil && string(bytes.TrimSpace(v)) != "null" {
		var l float64
		if err := json.Unmarshal(v, &l); err != nil || l < 0 || l > 1<<40 {
			return h, bad("life", "a number of seconds")
		}
		h.Life = int64(l)
	}
	return h, nil
}

// postChunk answers up2k chunk uploads: the chunk must belong to a session
// of the volume posted to, and the user must be allowed to write there.
func (s *Server) postChunk(q *req) error {
	if err := s.mayUp2k(q); err != nil {
		return err
	}
	h := q.r.Header
	wark, hashes := strings.TrimSpace(h.Get("X-Up2k-Wark")), h.Get("X-Up2k-Hash")
	if wark == "" || strings.TrimSpace(hashes) == "" {
		return errorf(http.StatusBadRequest, "need hash and wark headers for binary POST (X-Up2k-Hash, X-Up2k-Wark)")
	}
	if q.r.ContentLength < 0 {
		return errorf(http.StatusBadRequest, "you must supply a content-length for binary POST")
	}
	subc := int64(-1)
	if v := h.Get("X-Up2k-Subc"); v != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return errorf(http.StatusBadRequest, "X-Up2k-Subc %q: want a byte offset inside the chunk", v)
		}
		subc = n
	}
	body := s.lowat(q, q.r.Body, q.r.ContentLength)
	w, err := s.up.WriteChunks(q.r.Context(), up2k.ChunkPost{
		Vol: q.vol, Wark: wark, Hashes: hashes, Subc: subc,
		Body: newIdleReader(q, body), Length: q.r.ContentLength,
	})
	body.done()
	if err != nil {
		return err
	}
	if w.Done {
		s.published(q, w) // durable before this reply
	}
	q.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	q.w.WriteHeader(http.StatusOK)
	_, err = io.WriteString(q.w, "thank")
	return err
}

func writeJSON(q *req, code int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	q.w.Header().Set("Content-Type", "application/json")
	q.w.WriteHeader(code)
	_, err = q.w.Write(b)
	return err
}
