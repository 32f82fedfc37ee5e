package http

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"

	"hoard/store"
)

// Logging in to a password share with the login form, on the share's own
// path: copyparty's page posts it as multipart (act=login, cppwd, uhash),
// hoard's login page as urlencoded. The share's password (not an
// account's) sets a cppwd cookie whose path is the share's, so it goes
// nowhere else; the share route then reads it like ?pw=.

// maxLoginPeek is how much of a multipart body is looked at to see whether
// it is a login form (its first part is act).
const maxLoginPeek = 8 << 10

// maxLoginForm bounds the whole of a multipart login form.
const maxLoginForm = 1 << 20

// shareLoginForm reports whether the POST is a login or logout form and
// returns its fields. It looks at the body without taking what another
// handler needs: when the form is not a login, the body reads again from
// its first byte.
func shareLoginForm(q *req) (url.Values, bool, error) {
	ct, params, err := mime.ParseMediaType(q.r.Header.Get("Content-Type"))
	if err != nil || q.r.Body == nil {
		return nil, false, nil
	}
	body := q.r.Body
	// What is looked at arrives within one deadline (wholeBody); lifted
	// once read, and on handing the body on (an upload has its own).
	lift := q.wholeBody()
	defer lift()
	switch {
	case ct == "application/x-www-form-urlencoded":
		// hoard's own handler reads at most 64 KiB of such a form too
		buf, err := io.ReadAll(io.LimitReader(body, 64<<10+1))
		if err != nil {
			return nil, false, bodyErr(err, "a form", 64<<10)
		}
		q.r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(buf), body), body}
		if len(buf) > 64<<10 {
			return nil, false, nil
		}
		f, err := url.ParseQuery(string(buf))
		if err != nil || (f.Get("act") != "login" && f.Get("act") != "logout") {
			return nil, false, nil
		}
		return f, true, nil
	case ct == "multipart/form-data" && params["boundary"] != "":
		br := bufio.NewReaderSize(body, maxLoginPeek)
		q.r.Body = struct {
			io.Reader
			io.Closer
		}{br, body}
		head, err := br.Peek(maxLoginPeek)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
			return nil, false, bodyErr(err, "a form", maxLoginForm)
		}
		act := firstAct(multipart.NewReader(bytes.NewReader(head), params["boundary"]))
		if act != "login" && act != "logout" {
			return nil, false, nil
		}
		// A login form: read it whole (the peek told what it is), but no
		// more than a login form can need.
		mr := multipart.NewReader(io.LimitReader(br, maxLoginForm), params["boundary"])
		if firstAct(mr) != act {
			return nil, false, errorf(http.StatusBadRequest, "bad multipart body")
		}
		f, err := loginFields(mr, act)
		if err != nil {
			err = bodyErr(err, "a login form", maxLoginForm)
		}
		return f, err == nil, err
	}
	return nil, false, nil
}

// firstAct is the value of the first part of a multipart form when that
// part is the field act (at most 64 bytes), else "".
func firstAct(mr *multipart.Reader) string {
	p, err := mr.NextPart()
	if err != nil || p.FileName() != "" || p.FormName() != "act" {
		return ""
	}
	v, err := io.ReadAll(io.LimitReader(p, 64+1))
	if err != nil || len(v) > 64 {
		return ""
	}
	return string(v)
}

// shareLogin answers a login or logout form on a share's path: the share's
// password sets the cookie for the share's path; a wrong one (an account's
// password too) is 401, slowed down like every wrong password; a share
// without a password has nothing to log in to.
func (s *Server) shareLogin(q *req, key string, sh store.Share, f url.Values) error {
	if err := s.cop.Check(q.r); err != nil {
		return errorf(http.StatusForbidden, "login rejected by the cross-origin check: %v", err)
	}
	ck := &http.Cookie{Name: "cppwd", Path: q.loc + "/" + escapeName(s.shrName) + "/" + key, HttpOnly: true, Secure: q.scheme == "https", SameSite: http.SameSiteLaxMode}
	if f.Get("act") == "logout" {
		ck.Value, ck.MaxAge = "x", -1
	} else {
		if !sh.HasPassword() {
			return errorf(http.StatusBadRequest, "this share needs no password")
		}
		pw := f.Get("cppwd")
		if pw == "" {
			return errorf(http.StatusBadRequest, "the password is empty")
		}
		if err := s.guessTurn(q, []string{pw}); err != nil {
			return err
		}
		if !sh.CheckPassword(pw) {
			s.slowGuess(q)
			return &httpError{code: http.StatusUnauthorized, msg: "wrong password"}
		}
		s.fails.worked(q.ip, pw)
		ck.Value, ck.MaxAge = cookieValue(pw), 30*24*3600
	}
	http.SetCookie(q.w, ck)
	q.w.Header().Set("Cache-Control", "no-store")
	http.Redirect(q.w, q.r, q.loc+"/"+escapePath(strings.Join(q.parts, "/"))+trailingSlash(q), http.StatusSeeOther)
	return nil
}
