package http

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"hoard/up2k"
)

// The browser UI: JavaScript modules and CSS in http/ui, embedded, served
// under /.cpr/ (copyparty's prefix). Every HTML page links them under
// /.cpr/<version>/, where version is a hash of all of them: those URLs
// never change content and are cached immutable; relative imports between
// the modules stay inside one version. /.cpr/<name> (no version) answers
// the current file with no-cache, for hand-written links.

//go:embed ui
var uiFiles embed.FS

type uiAsset struct {
	body  []byte
	ctype string
	etag  string
}

var uiAssets, uiVersion = loadUI()

func loadUI() (map[string]uiAsset, string) {
	m := map[string]uiAsset{}
	var all strings.Builder
	names, err := fs.Glob(uiFiles, "ui/*")
	if err != nil {
		panic(err)
	}
	for _, n := range names { // sorted by fs.Glob
		b, err := uiFiles.ReadFile(n)
		if err != nil {
			panic(err)
		}
		base := path.Base(n)
		sum := up2k.ChunkHash(b) // SHA-512, URL-safe base64
		ct := mime.TypeByExtension(path.Ext(base))
		switch path.Ext(base) {
		case ".js":
			ct = "text/javascript; charset=utf-8"
		case ".css":
			ct = "text/css; charset=utf-8"
		}
		m[base] = uiAsset{body: b, ctype: ct, etag: `"` + sum[:16] + `"`}
		all.WriteString(base + "\x00" + sum + "\n")
	}
	return m, "v" + up2k.ChunkHash([]byte(all.String()))[:12]
}

// uiURL is the versioned URL of a UI asset, behind the --rp-loc prefix.
func (q *req) uiURL(name string) string {
	return q.loc + "/.cpr/" + uiVersion + "/" + name
}

// uiCSP is the policy of every HTML page that runs the UI: styles only
// from this origin's files, data only from this origin, no inline code and
// no eval. Its script source is filled per response by uiPolicy.
const uiCSP = "default-src 'none'; script-src %s; worker-src 'self'; style-src 'self'; img-src 'self' blob: data:; media-src 'self' blob:; connect-src 'self'; frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'self'"

// uiPolicy returns a page's CSP and the nonce its one <script> tag
// carries. Scripts run only from that tag and what it loads ('strict-
// dynamic': the UI's modules and workers), not from 'self': under 'self'
// a file someone uploaded as x.js on this origin would run if markup were
// ever injected into a page. A page without script gets 'none'.
func uiPolicy(withScript bool) (csp, nonce string) {
	if !withScript {
		return fmt.Sprintf(uiCSP, "'none'"), ""
	}
	b := make([]byte, 18)
	rand.Read(b)
	nonce = base64.RawURLEncoding.EncodeToString(b)
	return fmt.Sprintf(uiCSP, "'nonce-"+nonce+"' 'strict-dynamic'"), nonce
}

// asset answers GET /.cpr/[<version>/]<name>. Anyone may fetch the UI.
func (s *Server) asset(q *req) error {
	if q.r.Method != http.MethodGet && q.r.Method != http.MethodHead {
		q.w.Header().Set("Allow", "GET, HEAD")
		return errorf(http.StatusMethodNotAllowed, "the UI's files are read-only")
	}
	parts := q.parts[1:]
	versioned := len(parts) == 2 && parts[0] == uiVersion
	if len(parts) == 2 && !versioned && strings.HasPrefix(parts[0], "v") {
		return errorf(http.StatusNotFound, "not found: that version of the UI is gone; reload the page")
	}
	if !versioned && len(parts) != 1 {
		return errorf(http.StatusNotFound, "not found: /%s", strings.Join(q.parts, "/"))
	}
	a, ok := uiAssets[parts[len(parts)-1]]
	if !ok {
		return errorf(http.StatusNotFound, "not found: /%s", strings.Join(q.parts, "/"))
	}
	h := q.w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("ETag", a.etag)
	if versioned {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(q.w, q.r, "", time.Time{}, bytes.NewReader(a.body))
	return nil
}

// login answers act=login (field cppwd, copyparty's form): a password that
// matches an account sets the cppwd cookie and sends the browser back to
// the page with a GET; a wrong one is 401, slowed down like every wrong
// password. act=logout clears the cookie.
func (s *Server) login(q *req, f url.Values) error {
	if err := s.cop.Check(q.r); err != nil {
		return errorf(http.StatusForbidden, "login rejected by the cross-origin check: %v", err)
	}
	ck := &http.Cookie{Name: "cppwd", Path: q.loc + "/", HttpOnly: true, Secure: q.scheme == "https", SameSite: http.SameSiteLaxMode}
	if f.Get("act") == "logout" {
		ck.Value, ck.MaxAge = "x", -1
	} else {
		pw := f.Get("cppwd")
		if pw == "" {
			return errorf(http.StatusBadRequest, "the password is empty")
		}
		if err := s.guessTurn(q, []string{pw}); err != nil {
			return err
		}
		if _, ok := s.st.AuthenticateContext(q.r.Context(), pw); !ok {
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

func trailingSlash(q *req) string {
	if q.slash && len(q.parts) > 0 {
		return "/"
	}
	return ""
}

// cookieValue is pw as the cppwd cookie carries it: as is when every byte
// is allowed in a cookie value, else query-escaped (credentials tries the
// unescaped form too).
func cookieValue(pw string) string {
	for i := 0; i < len(pw); i++ {
		if c := pw[i]; c <= 0x20 || c >= 0x7f || c == '"' || c == ';' || c == ',' || c == '\\' || c == '%' || c == '+' {
			return url.QueryEscape(pw)
		}
	}
	return pw
}

// isNavigation reports whether a browser asked for a page to show (not a
// script's fetch, not curl).
func isNavigation(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodPost {
		return false
	}
	if m := r.Header.Get("Sec-Fetch-Mode"); m != "" {
		return m == "navigate" && r.Header.Get("Sec-Fetch-Dest") == "document"
	}
	return false
}

var loginTmpl = template.Must(template.New("login").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title><link rel="stylesheet" href="{{.CSS}}">
</head><body class="login">
<main><h1>{{.Title}}</h1><p class="msg" role="alert">{{.Msg}}</p>
<form method="post" action="{{.Action}}" class="loginf"><input type="hidden" name="act" value="login">
<label for="cppwd">password</label> <input type="password" id="cppwd" name="cppwd" autocomplete="current-password" autofocus required>
<button>log in</button></form>
{{if .User}}<form method="post" action="{{.Action}}"><input type="hidden" name="act" value="logout"><p>logged in as <b>{{.User}}</b> <button>logout</button></p></form>{{end}}
<p><a href="{{.Home}}">back to the top</a></p></main>
</body></html>
`))

// writeLoginPage answers a browser's page request that needs rights the
// visitor lacks: the status stays (401 anonymous, 403 known user), the
// body offers the login. The 401 names a scheme of its own, not Basic, so
// that the browser shows the page instead of its password prompt.
func writeLoginPage(q *req, code int, msg string) {
	h := q.w.Header()
	if code == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `hoard-login realm="hoard"`)
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	csp, _ := uiPolicy(false)
	h.Set("Content-Security-Policy", csp)
	title := "log in"
	if msg == errUnauthorized.msg {
		msg = "this page needs a password"
	}
	if code == http.StatusForbidden {
		title = "not allowed"
	}
	q.w.WriteHeader(code)
	loginTmpl.Execute(q.w, struct{ Title, Msg, CSS, Action, Home, User string }{
		Title: title, Msg: msg, CSS: q.uiURL("ui.css"), User: q.user, Home: q.loc + "/",
		Action: q.loc + "/" + escapePath(strings.Join(q.parts, "/")) + trailingSlash(q),
	})
}
