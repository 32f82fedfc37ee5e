package http

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"math"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"hoard/store"
)

// shareReq is the body of POST ?share, as copyparty's web UI sends it:
// {"k": key, "vp": [paths], "pw": password, "exp": minutes, "perms": [names]}.
// vp and perms may also be single strings, exp a number or a string.
type shareReq struct {
	K     string          `json:"k"`
	VP    json.RawMessage `json:"vp"`
	PW    string          `json:"pw"`
	Exp   json.RawMessage `json:"exp"`
	Perms json.RawMessage `json:"perms"`
}

// maxShareMinutes caps a share's lifetime (100 years).
const maxShareMinutes = 100 * 366 * 24 * 60

// stringList reads a JSON string or array of strings; null or absent is empty.
func stringList(raw json.RawMessage, what string) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, errorf(http.StatusBadRequest, "share: %s must be a string or a list of strings", what)
	}
	if len(list) > 1000 {
		return nil, errorf(http.StatusBadRequest, "share: too many %s", what)
	}
	return list, nil
}

// parseShareReq decodes and checks the body of POST ?share. now is the
// creation time; the result still needs the path and permission checks.
func parseShareReq(body []byte, now time.Time) (sh store.Share, pw string, vps []string, err error) {
	var r shareReq
	if err := json.Unmarshal(body, &r); err != nil {
		return sh, "", nil, errorf(http.StatusBadRequest, "share: the body is not the JSON object {k, vp, pw, exp, perms}")
	}
	sh.Key = r.K
	if sh.Key == "" {
		sh.Key = randomKey(12)
	}
	if err := store.CheckShareKey(sh.Key); err != nil {
		return sh, "", nil, errorf(http.StatusBadRequest, "share key %q: %s", sh.Key, trimPkg(err.Error()))
	}
	if vps, err = stringList(r.VP, "vp"); err != nil {
		return sh, "", nil, err
	}
	var minutes float64
	if len(r.Exp) > 0 && string(r.Exp) != "null" && string(r.Exp) != `""` {
		var s string
		if json.Unmarshal(r.Exp, &s) == nil {
			minutes, err = strconv.ParseFloat(strings.TrimSpace(s), 64)
		} else {
			err = json.Unmarshal(r.Exp, &minutes)
		}
		if err != nil || math.IsNaN(minutes) || minutes < 0 || minutes > maxShareMinutes {
			return sh, "", nil, errorf(http.StatusBadRequest, "share: exp is the lifetime in minutes, 0 to %d (0 never expires)", maxShareMinutes)
		}
	}
	sh.Created = now.Unix()
	if minutes > 0 {
		sh.Expires = now.Add(time.Duration(minutes * float64(time.Minute))).Unix()
		if sh.Expires <= sh.Created {
			sh.Expires = sh.Created + 1
		}
	}
	names, err := stringList(r.Perms, "perms")
	if err != nil {
		return sh, "", nil, err
	}
	var letters string
	for _, n := range names {
		l, ok := map[string]string{"read": "r", "r": "r", "write": "w", "w": "w", "move": "m", "m": "m", "delete": "d", "d": "d"}[n]
		if !ok {
			return sh, "", nil, errorf(http.StatusBadRequest, "share: unknown permission %q (read, write, move, delete)", n)
		}
		if !strings.Contains(letters, l) {
			letters += l
		}
	}
	if letters == "" {
		letters = "r"
	}
	sh.Perms = letters
	if len(r.PW) > 256 {
		return sh, "", nil, errorf(http.StatusBadRequest, "share: password longer than 256 bytes")
	}
	return sh, r.PW, vps, nil
}

func randomKey(n int) string {
	const abc = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = abc[int(b[i])%len(abc)]
	}
	return string(b)
}

// sharePerm turns a share's letters into permissions.
func sharePerm(letters string) store.Perm {
	var p store.Perm
	for _, c := range letters {
		switch c {
		case 'r':
			p |= store.PermRead
		case 'w':
			p |= store.PermWrite
		case 'm':
			p |= store.PermMove
		case 'd':
			p |= store.PermDelete
		}
	}
	return p
}

// postShare reads the body of POST ?share (at most 64 KiB).
func (s *Server) postShare(q *req) error {
	body, err := io.ReadAll(http.MaxBytesReader(q.w, q.r.Body, 64<<10))
	if err != nil {
		return err
	}
	return s.createShare(q, body)
}

// createShare answers POST ?share: the body names what to share (one
// folder, or one file); without vp, the request's own path is shared. The
// creator must be logged in and hold every permission the share grants.
func (s *Server) createShare(q *req, body []byte) error {
	if s.shares == nil {
		return errorf(http.StatusBadRequest, "sharing is disabled on this server (--shr)")
	}
	if q.user == "" {
		return errUnauthorized
	}
	sh, pw, vps, err := parseShareReq(body, time.Now())
	if err != nil {
		return err
	}
	if len(vps) == 0 {
		vps = []string{"/" + strings.Join(q.parts, "/")}
	}
	parts, _, err := parsePath(vps[0])
	if err != nil {
		return err
	}
	if len(vps) > 1 {
		return s.createMultiShare(q, sh, pw, vps)
	}
	if len(parts) > 0 && parts[0] == s.shrName {
		return errorf(http.StatusBadRequest, "share: cannot share a share")
	}
	vol, rel := s.st.Resolve(parts)
	if vol == nil {
		return errorf(http.StatusBadRequest, "share: no volume at /%s", strings.Join(parts, "/"))
	}
	need := sharePerm(sh.Perms)
	if have := vol.Perms(q.user); !have.Has(need) {
		return errorf(http.StatusForbidden, "share: you do not have all the permissions you tried to grant (%s) in /%s", sh.Perms, strings.Join(parts, "/"))
	}
	fi, err := vol.Stat(rel)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errorf(http.StatusBadRequest, "share: /%s does not exist", strings.Join(parts, "/"))
		}
		return err
	}
	sh.VPath = strings.Join(parts, "/")
	fn := ""
	if !fi.IsDir() {
		if len(parts) == 0 {
			return errorf(http.StatusBadRequest, "share: nothing to share")
		}
		fn = parts[len(parts)-1]
		sh.VPath = strings.Join(parts[:len(parts)-1], "/")
		sh.Files = []string{fn}
	}
	return s.saveShare(q, sh, pw, fn)
}

// saveShare stores a checked share and answers 201 with its URL.
func (s *Server) saveShare(q *req, sh store.Share, pw, fn string) error {
	sh.Creator = q.user
	if err := sh.SetPassword(pw); err != nil {
		return err
	}
	if err := s.shares.Add(sh); err != nil {
		if errors.Is(err, store.ErrExists) {
			return errorf(http.StatusBadRequest, "sharekey [%s] is already in use", sh.Key)
		}
		return err
	}
	s.log.Info("share created", "key", sh.Key, "path", "/"+sh.VPath, "files", len(sh.Files), "perms", sh.Perms, "user", q.user, "expires", sh.Expires)
	u := s.shareURL(q, sh.Key) + "/" + escapeName(fn)
	q.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	q.w.WriteHeader(http.StatusCreated)
	_, err := q.w.Write([]byte("created share: " + u + "\n"))
	return err
}

// createMultiShare shares several files of one folder (copyparty's web
// UI sends a selection this way); folders cannot be mixed in.
func (s *Server) createMultiShare(q *req, sh store.Share, pw string, vps []string) error {
	var dir []string
	var vol *store.Volume
	for i, vp := range vps {
		parts, slash, err := parsePath(vp)
		if err != nil {
			return err
		}
		if len(parts) == 0 || slash {
			return errorf(http.StatusBadRequest, "share: you cannot select more than one folder, or mix files and folders in one selection")
		}
		if i == 0 {
			dir = parts[:len(parts)-1]
			if len(dir) > 0 && dir[0] == s.shrName {
				return errorf(http.StatusBadRequest, "share: cannot share a share")
			}
			if vol, _ = s.st.Resolve(dir); vol == nil {
				return errorf(http.StatusBadRequest, "share: no volume at /%s", strings.Join(dir, "/"))
			}
		} else if strings.Join(parts[:len(parts)-1], "/") != strings.Join(dir, "/") {
			return errorf(http.StatusBadRequest, "share: mismatching base paths in selection: /%s and /%s", strings.Join(dir, "/"), strings.Join(parts[:len(parts)-1], "/"))
		}
		fn := parts[len(parts)-1]
		if slices.Contains(sh.Files, fn) {
			continue
		}
		v, rel := s.st.Resolve(parts)
		if v != vol {
			return errorf(http.StatusBadRequest, "share: /%s is in another volume", strings.Join(parts, "/"))
		}
		fi, err := vol.Stat(rel)
		if err != nil || fi.IsDir() {
			return errorf(http.StatusBadRequest, "share: selected file not found: /%s", strings.Join(parts, "/"))
		}
		sh.Files = append(sh.Files, fn)
	}
	if have := vol.Perms(q.user); !have.Has(sharePerm(sh.Perms)) {
		return errorf(http.StatusForbidden, "share: you do not have all the permissions you tried to grant (%s) in /%s", sh.Perms, strings.Join(dir, "/"))
	}
	sh.VPath = strings.Join(dir, "/")
	fn := ""
	if len(sh.Files) == 1 {
		fn = sh.Files[0]
	}
	return s.saveShare(q, sh, pw, fn)
}

func (s *Server) shareURL(q *req, key string) string {
	scheme := "http"
	if q.r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + q.r.Host + "/" + escapeName(s.shrName) + "/" + key
}

// shareRoute serves a request below the share prefix: /<shr>/<key>/...
// reaches exactly the shared folder (or file) with the share's permissions,
// no more than its creator still has. A password share wants its password
// (?pw=, PW header, basic auth or the cppwd cookie); account passwords
// mean nothing here.
func (s *Server) shareRoute(q *req) error {
	if len(q.parts) < 2 {
		return errorf(http.StatusNotFound, "not found: /%s", strings.Join(q.parts, "/"))
	}
	key := q.parts[1]
	if store.CheckShareKey(key) != nil {
		return errorf(http.StatusNotFound, "no such share")
	}
	if q.r.Method == http.MethodPost && has(q.query, "eshare") {
		return s.editShare(q, key)
	}
	sh, ok := s.shares.Get(key)
	if !ok {
		return errorf(http.StatusNotFound, "no such share (or it expired)")
	}
	if sh.HasPassword() {
		pws, _ := credentials(q.r, q.query)
		ok := false
		for _, pw := range pws {
			ok = ok || sh.CheckPassword(pw)
		}
		if !ok {
			if len(pws) > 0 {
				s.slowGuess(q) // guessing gets slower, as for account passwords
			}
			return errUnauthorized
		}
	}
	vol, base := s.st.Resolve(splitVPath(sh.VPath))
	if vol == nil {
		return errorf(http.StatusNotFound, "the shared folder is gone")
	}
	rest := q.parts[2:]
	for _, k := range []string{"tree", "ups", "ru", "dls", "shares", "share"} {
		if has(q.query, k) {
			return errorf(http.StatusBadRequest, "?%s is not available inside a share", k)
		}
	}
	if has(q.query, "tar") || has(q.query, "zip") {
		return s.shareArchive(q, sh, vol, base, rest)
	}
	if len(sh.Files) > 0 {
		// Files of one folder: /<shr>/<key>/<name>; /<shr>/<key> is the
		// file itself when there is one, a listing of them otherwise.
		switch {
		case len(rest) > 1 || len(rest) == 1 && !slices.Contains(sh.Files, rest[0]):
			return errorf(http.StatusNotFound, "not found in this share")
		case len(rest) == 0 && len(sh.Files) > 1:
			q.vol, q.rel, q.user = vol, base, ""
			q.perm = sharePerm(sh.Perms) & vol.Perms(sh.Creator) &^ store.PermWrite
			return s.shareListing(q, sh.Files)
		case len(rest) == 0:
			rest = []string{sh.Files[0]}
		}
	}
	if err := vol.CheckNoLinks(base, rest); err != nil {
		return errorf(http.StatusNotFound, "not found in this share")
	}
	q.vol, q.user = vol, ""
	q.rel = path.Join(append([]string{base}, rest...)...)
	q.perm = sharePerm(sh.Perms) & vol.Perms(sh.Creator)
	switch q.r.Method {
	case http.MethodGet, http.MethodHead:
		return s.get(q)
	case http.MethodPut:
		return s.put(q)
	case http.MethodPost:
		return s.post(q)
	}
	q.w.Header().Set("Allow", "GET, HEAD, PUT, POST")
	return errorf(http.StatusMethodNotAllowed, "method %s is not supported in a share", q.r.Method)
}

// shareArchive answers ?tar and ?zip inside a folder share. The walk runs
// in a view of the volume whose os.Root is opened at the shared folder
// (store.Volume.Confine), so no symbolic link that leads outside it is
// followed, by the kernel's openat walk rather than a check before the
// open, and no mounted volume goes in: a share is one folder.
func (s *Server) shareArchive(q *req, sh store.Share, vol *store.Volume, base string, rest []string) error {
	if len(sh.Files) > 0 {
		return errorf(http.StatusBadRequest, "?tar and ?zip are not available in a share of several files; download them one by one")
	}
	if q.r.Method != http.MethodGet && q.r.Method != http.MethodHead && q.r.Method != http.MethodPost {
		q.w.Header().Set("Allow", "GET, HEAD, POST")
		return errorf(http.StatusMethodNotAllowed, "method %s is not supported for archives", q.r.Method)
	}
	cv, release, err := vol.Confine(base)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrNotDir) {
			return errorf(http.StatusNotFound, "the shared folder is gone")
		}
		return err
	}
	defer release()
	q.vol, q.user, q.share = cv, "", true
	q.rel = path.Join(rest...)
	q.perm = sharePerm(sh.Perms) & vol.Perms(sh.Creator) &^ store.PermWrite
	if q.r.Method == http.MethodPost {
		return s.post(q)
	}
	return s.get(q)
}

// shareListing lists the files of a several-file share.
func (s *Server) shareListing(q *req, files []string) error {
	if q.r.Method != http.MethodGet && q.r.Method != http.MethodHead {
		return errorf(http.StatusMethodNotAllowed, "a several-file share takes no uploads")
	}
	if !q.perm.Has(store.PermRead) {
		return errorf(http.StatusForbidden, "this share does not allow listing")
	}
	if !q.slash && !has(q.query, "ls") {
		http.Redirect(q.w, q.r, "/"+escapePath(strings.Join(q.parts, "/"))+"/", http.StatusMovedPermanently)
		return nil
	}
	l := listing{path: strings.Join(q.parts, "/"), perms: q.perm.Names(), acct: "*", vol: q.vol}
	for _, fn := range files {
		fi, err := q.vol.Stat(path.Join(q.rel, fn))
		if err != nil || fi.IsDir() || q.vol.CheckNoLinks(q.rel, []string{fn}) != nil {
			continue
		}
		l.entries = append(l.entries, q.entry(store.Entry{Name: fn, Size: fi.Size(), Mtime: fi.ModTime()}))
	}
	return s.writeListing(q, l)
}

func splitVPath(vp string) []string {
	if vp == "" {
		return nil
	}
	return strings.Split(vp, "/")
}

// editShare answers copyparty's POST /<shr>/<key>?eshare=rm (delete) and
// ?eshare=<minutes> (extend): by the share's creator or an admin.
func (s *Server) editShare(q *req, key string) error {
	if err := s.authenticate(q); err != nil {
		return err
	}
	if q.user == "" {
		return errUnauthorized
	}
	sh, ok := s.shares.Get(key)
	if !ok {
		return errorf(http.StatusNotFound, "no such share (or it expired)")
	}
	if sh.Creator != q.user && s.needAdmin(q) != nil {
		return errorf(http.StatusForbidden, "share %s belongs to another user and you are not an admin", key)
	}
	act := q.query.Get("eshare")
	if act != "rm" {
		n, err := strconv.Atoi(act)
		if err != nil || n < 1 || n > maxShareMinutes {
			return errorf(http.StatusBadRequest, "eshare=%q: want rm or a number of minutes to extend by", act)
		}
		if sh.Expires == 0 {
			return errorf(http.StatusBadRequest, "share %s never expires", key)
		}
		if err := s.shares.SetExpiry(key, max(time.Now().Unix(), sh.Expires)+int64(n)*60); err != nil {
			return err
		}
	} else if err := s.shares.Delete(key); err != nil {
		return err
	}
	s.log.Info("share changed", "key", key, "action", act, "user", q.user)
	http.Redirect(q.w, q.r, "/?shares", http.StatusSeeOther)
	return nil
}

// shareRow is one ?shares record.
type shareRow struct {
	Key     string   `json:"k"`
	URL     string   `json:"url"`
	VP      string   `json:"vp"`
	Files   []string `json:"files"`
	Perms   string   `json:"perms"`
	PW      bool     `json:"pw"`
	Creator string   `json:"un"`
	Created int64    `json:"t0"`
	Expires int64    `json:"t1"`
}

// listShares answers ?shares: the requester's shares (all of them for
// admins), as HTML, or JSON with ?j.
func (s *Server) listShares(q *req) error {
	if s.shares == nil {
		return errorf(http.StatusBadRequest, "sharing is disabled on this server (--shr)")
	}
	if q.user == "" {
		return errUnauthorized
	}
	all := s.needAdmin(q) == nil
	rows := []shareRow{}
	for _, sh := range s.shares.List() {
		if sh.Creator != q.user && !all {
			continue
		}
		u := s.shareURL(q, sh.Key) + "/"
		if len(sh.Files) > 0 {
			u += escapeName(sh.Files[0])
		}
		rows = append(rows, shareRow{Key: sh.Key, URL: u, VP: "/" + escapePath(sh.VPath), Files: append([]string{}, sh.Files...), Perms: sh.Perms, PW: sh.HasPassword(), Creator: sh.Creator, Created: sh.Created, Expires: sh.Expires})
	}
	if has(q.query, "j") {
		return sendJSON(q, rows)
	}
	return writePage(q, sharesPage, rows)
}

var sharesPage = template.Must(template.New("shares").Funcs(template.FuncMap{
	"time": func(t int64) string {
		if t == 0 {
			return "never"
		}
		return time.Unix(t, 0).UTC().Format("2006-01-02 15:04:05")
	},
}).Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>shares</title></head><body>
<h1>your shares</h1>
<table><tr><th>key</th><th>delete</th><th>pw</th><th>source</th><th>perms</th><th>user</th><th>created (UTC)</th><th>expires (UTC)</th></tr>
{{range .}}<tr><td><a href="{{.URL}}">{{.Key}}</a></td><td><form method="post" action="{{.URL}}?eshare=rm"><button>delete</button></form></td><td>{{if .PW}}yes{{else}}--{{end}}</td><td>{{.VP}}{{range .Files}}/{{.}}{{end}}</td><td>{{.Perms}}</td><td>{{.Creator}}</td><td>{{time .Created}}</td><td>{{time .Expires}}</td></tr>
{{end}}</table></body></html>
`))
