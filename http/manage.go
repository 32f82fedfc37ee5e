package http

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"

	"hoard/store"
)

// File management in copyparty's shapes: POST <path>?delete, POST
// /?delete with a JSON array of URL paths (u2c.py --dr, the browser's
// unpost with &unpost), POST <src>?move=<dst>, POST <src>?copy=<dst>, and
// act=mkdir (multipart or urlencoded) with name. Each decodes, makes one
// store call (the rules and permission checks live in store/manage.go)
// and encodes copyparty's reply.

// maxDeleteBody is copyparty's limit on a JSON body (1 MiB); u2c.py
// halves its list when it sees 413 with "json 2big".
const maxDeleteBody = 1 << 20

// maxMkdirName is copyparty's limit on the name of act=mkdir.
const maxMkdirName = 512

func (q *req) actor() store.Actor { return store.Actor{User: q.user, IP: q.ip} }

// domain turns a permission refusal for an anonymous user into 401, so
// the client asks for a password (as everywhere else); other errors pass.
// An unpost refused (not the uploader, too late, feature off) stays 403:
// a password would not change the answer the uploader is after.
func (q *req) domain(err error) error {
	var e *store.Error
	if err != nil && q.user == "" && !q.share && !has(q.query, "unpost") && errors.As(err, &e) && e.Kind == store.KindForbidden && e.Need != 0 {
		return errUnauthorized
	}
	return err
}

// manageCheck refuses file management inside a share (a share confines
// what its visitors see, and the paths these requests carry would name
// things outside it) and from another site's page: a browser attaches
// its cached Basic credentials (and cookie) to cross-site requests too,
// so a foreign page could otherwise delete or move through a logged-in
// user. Clients other than browsers send no Sec-Fetch-Site or Origin and
// pass.
func (s *Server) manageCheck(q *req, what string) error {
	if q.share {
		return errorf(http.StatusForbidden, "%s is not available inside a share", what)
	}
	if err := s.cop.Check(q.r); err != nil {
		return errorf(http.StatusForbidden, "%s rejected by the cross-origin check: %v", what, err)
	}
	return nil
}

// postDelete answers POST ?delete: the request's own path, or (a JSON,
// text or XML body, as copyparty takes it) a JSON array of URL paths.
// With ?unpost the uploader may delete their own recent uploads without
// d (store.DeleteOptions.Unpost). The reply is copyparty's line.
func (s *Server) postDelete(q *req) error {
	if err := s.manageCheck(q, "?delete"); err != nil {
		return err
	}
	locs := []store.Loc{{Vol: q.vol, Rel: q.rel}}
	if isJSONType(q.r.Header.Get("Content-Type")) {
		body, err := q.readWhole(maxDeleteBody, "the list of paths")
		if err != nil {
			var he *httpError
			if errors.As(err, &he) && he.code == http.StatusRequestEntityTooLarge {
				return errorf(http.StatusRequestEntityTooLarge, "json 2big (more than %d bytes); send fewer paths at a time", maxDeleteBody)
			}
			return err
		}
		paths, err := parseDeleteList(body)
		if err != nil {
			return err
		}
		locs = locs[:0]
		for _, p := range paths {
			parts, err := parseTarget(q.unloc(p))
			if err != nil {
				return err
			}
			v, rel := s.st.Resolve(parts)
			if v == nil { // known before anything is deleted
				return errorf(http.StatusForbidden, "no volume is mounted at /%s", strings.Join(parts, "/"))
			}
			locs = append(locs, store.Loc{Vol: v, Rel: rel})
		}
	}
	res, err := s.st.DeleteMany(q.r.Context(), q.actor(), locs, store.DeleteOptions{Unpost: has(q.query, "unpost")})
	if err != nil {
		return q.domain(err)
	}
	return q.text(http.StatusOK, fmt.Sprintf("deleted %d files (and %d/%d folders)\n", res.Files, res.Dirs, res.Dirs))
}

func isJSONType(ct string) bool {
	ct = strings.ToLower(ct)
	return strings.Contains(ct, "application/json") || strings.HasPrefix(ct, "text/plain") || strings.Contains(ct, "application/xml")
}

// parseDeleteList reads the body of POST /?delete: a JSON array of one or
// more URL paths (unescaped, as u2c.py and copyparty's browser send them;
// the leading slash is optional).
func parseDeleteList(body []byte) ([]string, error) {
	var paths []string
	if err := json.Unmarshal(body, &paths); err != nil {
		return nil, errorf(http.StatusUnprocessableEntity, "you POSTed %d bytes of invalid json: want an array of paths to delete", len(body))
	}
	if len(paths) == 0 {
		return nil, errorf(http.StatusBadRequest, "the list of paths to delete is empty")
	}
	return paths, nil
}

// parseTarget reads a URL path given in a query value or a JSON body (it
// was unescaped once already): a path on this server, the leading slash
// optional. Refused: a URL with a scheme or host, "..", control
// characters, backslashes, and escapes still left after that decoding
// (%2e, %2f, %5c: a client never encodes twice, so they are an attempt to
// slip "..", "/" or "\" past a check).
func parseTarget(p string) ([]string, error) {
	if p == "" {
		return nil, errorf(http.StatusBadRequest, "need a destination path")
	}
	if strings.Contains(p, "://") || strings.HasPrefix(p, "//") {
		return nil, errorf(http.StatusBadRequest, "%q is not a path on this server", p)
	}
	low := strings.ToLower(p)
	for _, e := range []string{"%2e", "%2f", "%5c", "%00"} {
		if strings.Contains(low, e) {
			return nil, errorf(http.StatusBadRequest, "the path contains an escaped %q: paths are unescaped once, so send it as it is", e)
		}
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	parts, _, err := parsePath(p)
	return parts, err
}

// postTransfer answers POST <src>?move=<dst> and ?copy=<dst>: dst is a
// URL path (in any volume); missing folders on the way are made, as
// copyparty does. ?replace (or a Replace header) overwrites an existing
// destination, which needs d there. Copyparty's reply: 201 "k".
func (s *Server) postTransfer(q *req, key string) error {
	if err := s.manageCheck(q, "?"+key); err != nil {
		return err
	}
	parts, err := parseTarget(q.unloc(q.query.Get(key)))
	if err != nil {
		return err
	}
	if err := s.routedElsewhere(parts); err != nil { // dav.go
		return err
	}
	dv, drel := s.st.Resolve(parts)
	src, dst := store.Loc{Vol: q.vol, Rel: q.rel}, store.Loc{Vol: dv, Rel: drel}
	opt := store.DestOptions{Parents: true, Overwrite: flag(q, "replace", "Replace")}
	if key == "move" {
		_, err = s.st.Move(q.r.Context(), q.actor(), src, dst, opt)
	} else {
		_, err = s.st.Copy(q.r.Context(), q.actor(), src, dst, opt)
	}
	if err != nil {
		return q.domain(err)
	}
	return q.text(http.StatusCreated, "k")
}

// mkdirName checks the name of act=mkdir and joins it to the request's
// path: copyparty takes "a/b" (parents are made).
func mkdirTarget(q *req, name string) ([]string, error) {
	if name == "" {
		return nil, errorf(http.StatusBadRequest, "mkdir needs a name")
	}
	if len(name) > maxMkdirName {
		return nil, errorf(http.StatusBadRequest, "the folder name is longer than %d bytes", maxMkdirName)
	}
	if strings.HasPrefix(name, "/") {
		return nil, errorf(http.StatusBadRequest, "the folder name must be relative to this folder")
	}
	sub, err := parseTarget(name)
	if err != nil {
		return nil, err
	}
	if len(sub) == 0 {
		return nil, errorf(http.StatusBadRequest, "mkdir needs a name")
	}
	return append(append([]string{}, q.parts...), sub...), nil
}

// mkdir makes the folder name in the request's folder (act=mkdir) and
// answers copyparty's 201 with X-New-Dir, the new folder's URL path.
func (s *Server) mkdir(q *req, name string) error {
	if err := s.manageCheck(q, "mkdir"); err != nil {
		return err
	}
	parts, err := mkdirTarget(q, name)
	if err != nil {
		return err
	}
	v, rel := s.st.Resolve(parts)
	if _, err := s.st.Mkdir(q.r.Context(), q.actor(), store.Loc{Vol: v, Rel: rel}, store.MkdirOptions{Parents: true}); err != nil {
		return q.domain(err)
	}
	u := q.loc + "/" + escapePath(strings.Join(parts, "/"))
	h := q.w.Header()
	h.Set("X-New-Dir", u)
	h.Set("Location", u+"/")
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	q.w.WriteHeader(http.StatusCreated)
	_, err = fmt.Fprintf(q.w, "<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body><a href=\"%s/\">%s/</a></body></html>\n", html.EscapeString(u), html.EscapeString(u))
	return err
}

// mkdirMultipart reads the rest of a multipart act=mkdir form: its name
// field.
func (s *Server) mkdirMultipart(q *req, mr *multipart.Reader) error {
	name, found := "", false
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return errorf(http.StatusBadRequest, "bad multipart body: %v", err)
		}
		if p.FormName() != "name" || found {
			continue
		}
		v, err := io.ReadAll(io.LimitReader(p, maxMkdirName+1))
		if err != nil {
			return errorf(http.StatusBadRequest, "bad multipart body: %v", err)
		}
		if len(v) > maxMkdirName {
			return errorf(http.StatusBadRequest, "the folder name is longer than %d bytes", maxMkdirName)
		}
		name, found = string(v), true
	}
	return s.mkdir(q, name)
}

// urlencoded answers a urlencoded POST: act=mkdir makes a folder; anything
// else is the note copyparty's clients post when a batch is done
// (msg=upload-queue-empty;...), answered like a GET.
func (s *Server) urlencoded(q *req) error {
	body, err := q.readWhole(64<<10, "a form")
	if err != nil {
		return err
	}
	if f, err := url.ParseQuery(string(body)); err == nil {
		switch f.Get("act") {
		case "mkdir":
			return s.mkdir(q, f.Get("name"))
		case "login", "logout":
			return s.login(q, f)
		}
	}
	return s.get(q)
}

func (q *req) text(code int, msg string) error {
	h := q.w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	q.w.WriteHeader(code)
	_, err := io.WriteString(q.w, msg)
	return err
}
