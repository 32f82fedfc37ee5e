package http

import (
	"encoding/json"
	"errors"
	"html/template"
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
		sh.Key = store.NewShareKey(12)
	}
	if err := store.CheckShareKey(sh.Key); err != nil {
		return sh, "", nil, err
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

// postShare reads the body of POST ?share (at most 64 KiB).
func (s *Server) postShare(q *req) error {
	body, err := q.readWhole(64<<10, "a share's JSON")
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
	have := vol.Perms(q.user)
	if !have.Has(sh.Grants()) {
		return errorf(http.StatusForbidden, "share: you do not have all the permissions you tried to grant (%s) in /%s", sh.Perms, strings.Join(parts, "/"))
	}
	sh.VPath = strings.Join(parts, "/")
	if !have.Has(store.PermRead) {
		// A creator who may not read learns nothing of what is there: the
		// path is a folder to upload into, made now if missing, as an
		// upload into it would make it.
		if _, ok := s.shares.Get(sh.Key); ok {
			return errorf(http.StatusBadRequest, "sharekey [%s] is already in use", sh.Key)
		}
		if err := vol.MakeDir(rel); err != nil {
			return err
		}
		return s.saveShare(q, sh, pw, "")
	}
	fi, err := vol.Stat(rel)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errorf(http.StatusBadRequest, "share: /%s does not exist", strings.Join(parts, "/"))
		}
		return err
	}
	fn := ""
	if !fi.IsDir() {
		if len(parts) == 0 {
			return errorf(http.StatusBadRequest, "share: nothing to share")
		}
		fn = parts[len(parts)-1]
		sh.VPath = strings.Join(parts[:len(parts)-1], "/")
		sh.Files = []string{fn}
	}
	if err := s.checkShareable(sh); err != nil {
		return err
	}
	return s.saveShare(q, sh, pw, fn)
}

// checkShareable refuses a share that would not be served: one whose folder,
// or a folder above it, or one of whose files, is a symbolic link (a share
// is served through a view that follows none of them; share what it leads
// to instead).
func (s *Server) checkShareable(sh store.Share) error {
	view, _, release, err := s.st.OpenShare(sh)
	if err == nil {
		defer release()
		for _, fn := range sh.Files {
			if _, err = view.Stat(fn); err != nil {
				break
			}
		}
	}
	if err != nil {
		return errorf(http.StatusBadRequest, "share: /%s is reached through a symbolic link (or is gone); share what it leads to", sh.VPath)
	}
	return nil
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
	var dirRel string
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
			if vol, dirRel = s.st.Resolve(dir); vol == nil {
				return errorf(http.StatusBadRequest, "share: no volume at /%s", strings.Join(dir, "/"))
			}
		} else if strings.Join(parts[:len(parts)-1], "/") != strings.Join(dir, "/") {
			return errorf(http.StatusBadRequest, "share: mismatching base paths in selection: /%s and /%s", strings.Join(dir, "/"), strings.Join(parts[:len(parts)-1], "/"))
		}
		fn := parts[len(parts)-1]
		if slices.Contains(sh.Files, fn) {
			continue
		}
		if v, _ := s.st.Resolve(parts); v != vol {
			return errorf(http.StatusBadRequest, "share: /%s is in another volume", strings.Join(parts, "/"))
		}
		sh.Files = append(sh.Files, fn)
	}
	// Permissions before the files are looked at: a share of files serves
	// them for reading, so its creator must be able to read them (and
	// whoever may not learns nothing of what exists).
	if have := vol.Perms(q.user); !have.Has(sh.Grants() | store.PermRead) {
		return errorf(http.StatusForbidden, "share: you do not have all the permissions you tried to grant (%s) in /%s; sharing files needs read", sh.Perms, strings.Join(dir, "/"))
	}
	for _, fn := range sh.Files {
		fi, err := vol.Stat(path.Join(dirRel, fn))
		if err != nil || fi.IsDir() {
			return errorf(http.StatusBadRequest, "share: selected file not found: /%s", path.Join(strings.Join(dir, "/"), fn))
		}
	}
	sh.VPath = strings.Join(dir, "/")
	if err := s.checkShareable(sh); err != nil {
		return err
	}
	fn := ""
	if len(sh.Files) == 1 {
		fn = sh.Files[0]
	}
	return s.saveShare(q, sh, pw, fn)
}

func (s *Server) shareURL(q *req, key string) string {
	return q.abs("/" + escapeName(s.shrName) + "/" + key)
}

// shareRoute serves a request below the share prefix: /<shr>/<key>/...
// reaches exactly the shared folder (or files) with the share's
// permissions, no more than its creator still has. Every operation runs in
// a view of the volume whose os.Root is opened at the shared folder
// (store.Volume.Confine, ConfineFiles), so a symbolic link that leads out
// of it, even one swapped in while the request runs, is refused by the
// openat walk itself rather than by a check before the open. A password
// share wants its password (?pw=, PW header, basic auth or the cppwd
// cookie); account passwords mean nothing here.
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
	if q.r.Method == http.MethodPost {
		if f, ok, err := shareLoginForm(q); err != nil {
			return err
		} else if ok {
			return s.shareLogin(q, key, sh, f) // sharelogin.go
		}
	}
	shareOut := ""
	if sh.HasPassword() {
		pws, fromCookie := credentials(q.r, q.query, false)
		if len(pws) > 0 {
			if err := s.guessTurn(q, pws); err != nil {
				return err
			}
		}
		ok := false
		for _, pw := range pws {
			if !ok && sh.CheckPassword(pw) {
				ok = true
				s.fails.worked(q.ip, pw)
			}
		}
		if !ok {
			if len(pws) > 0 {
				s.slowGuess(q) // guessing gets slower, as for account passwords
			}
			return errUnauthorized
		}
		if fromCookie { // the login form's cookie: the page offers to log out
			shareOut = q.loc + "/" + escapeName(s.shrName) + "/" + key + "/"
		}
		if fromCookie || viaBasic(q) {
			// A browser sends these on its own, from another site's page
			// too: refuse such a page's changes (CSRF), as authenticate
			// does for account passwords.
			if err := s.cop.Check(q.r); err != nil {
				return errorf(http.StatusForbidden, "rejected by the cross-origin check: %v", err)
			}
		}
	}
	rest := q.parts[2:]
	for _, k := range []string{"tree", "ups", "ru", "dls", "shares", "share"} {
		if has(q.query, k) {
			return errorf(http.StatusBadRequest, "?%s is not available inside a share", k)
		}
	}
	archive := has(q.query, "tar") || has(q.query, "zip")
	if len(sh.Files) > 0 {
		// Files of one folder: /<shr>/<key>/<name>; /<shr>/<key> is the
		// file itself when there is one, a listing of them otherwise.
		switch {
		case archive:
			return errorf(http.StatusBadRequest, "?tar and ?zip are not available in a share of files; download them one by one")
		case len(rest) > 1 || len(rest) == 1 && !slices.Contains(sh.Files, rest[0]):
			return errorf(http.StatusNotFound, "not found in this share")
		case len(rest) == 0 && len(sh.Files) == 1:
			rest = []string{sh.Files[0]}
		}
	}
	view, perm, release, err := s.st.OpenShare(sh)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrNotDir) || errors.Is(err, store.ErrOutside) {
			return errorf(http.StatusNotFound, "the shared folder is gone")
		}
		return err
	}
	defer release()
	q.vol, q.user, q.share, q.perm, q.shareOut = view, "", true, perm, shareOut
	q.shr, q.shrPerm = &sh, perm
	q.rel = path.Join(rest...)
	if s.st.Shadowed(view, q.rel) {
		// Another volume is mounted there: by URL the folder is not this
		// volume's, so the share does not reach it through the disk.
		return errorf(http.StatusNotFound, "not found in this share")
	}
	if len(sh.Files) > 1 && len(rest) == 0 {
		return s.shareListing(q)
	}
	if archive {
		q.perm &^= store.PermWrite
	}
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

// shareStillAllowed is Server.stillAllowed inside the share sh, opened
// with perm: the share is still live (not deleted, expired, nor moved with its
// folder), of the same folder and files, and still grants what it did
// (its creator may still do that).
func (s *Server) shareStillAllowed(sh store.Share, perm store.Perm) bool {
	now, ok := s.shares.Get(sh.Key)
	if !ok || now.VPath != sh.VPath || (len(now.Files) > 0) != (len(sh.Files) > 0) || !isSubset(now.Files, sh.Files) {
		return false
	}
	_, _, p := s.st.ShareAccess(now)
	return p.Has(perm & store.PermRead)
}

// isSubset reports whether every name of a is in b.
func isSubset(a, b []string) bool {
	for _, n := range a {
		if !slices.Contains(b, n) {
			return false
		}
	}
	return true
}

// shareListing lists the files of a several-file share (the view lists
// just them, and none through a link).
func (s *Server) shareListing(q *req) error {
	if q.r.Method != http.MethodGet && q.r.Method != http.MethodHead {
		return errorf(http.StatusMethodNotAllowed, "a share of files takes no uploads")
	}
	if !q.perm.Has(store.PermRead) {
		return q.denyRead()
	}
	if !q.slash && !has(q.query, "ls") {
		http.Redirect(q.w, q.r, q.loc+"/"+escapePath(strings.Join(q.parts, "/"))+"/", http.StatusMovedPermanently)
		return nil
	}
	ents, err := q.vol.List(q.r.Context(), "", store.ListOptions{Dots: true})
	if err != nil {
		return err
	}
	l := listing{path: strings.Join(q.parts, "/"), perms: q.perm.Names(), acct: "*", vol: q.vol}
	for _, e := range ents {
		l.entries = append(l.entries, q.entry(e))
	}
	return s.writeListing(q, l)
}

// editShare answers copyparty's POST /<shr>/<key>?eshare=rm (delete) and
// ?eshare=<minutes> (extend): by the share's creator, or an admin of every
// volume the share reaches (store.MayManageShare).
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
	if !s.st.MayManageShare(q.user, sh) {
		return errorf(http.StatusForbidden, "share %s belongs to another user, and you are not an admin of every volume it reaches", key)
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
	http.Redirect(q.w, q.r, q.loc+"/?shares", http.StatusSeeOther)
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

// listShares answers ?shares: the requester's shares, and those of others
// that the requester is an admin of every reached volume of, as HTML, or
// JSON with ?j.
func (s *Server) listShares(q *req) error {
	if s.shares == nil {
		return errorf(http.StatusBadRequest, "sharing is disabled on this server (--shr)")
	}
	if q.user == "" {
		return errUnauthorized
	}
	rows := []shareRow{}
	for _, sh := range s.shares.List() {
		if !s.st.MayManageShare(q.user, sh) {
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
