package e2e

import (
	"mime"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// inertType are the types a test accepts inline without a sandbox: text as
// text, pictures other than SVG, sound, video, data, archives.
func inertType(mt string) bool {
	switch {
	case mt == "text/plain", mt == "text/csv", mt == "application/octet-stream", mt == "application/json",
		mt == "application/pdf", mt == "application/zip", mt == "application/gzip":
		return true
	case strings.HasPrefix(mt, "image/") && !strings.Contains(mt, "svg") && !strings.Contains(mt, "xml"):
		return true
	case strings.HasPrefix(mt, "audio/"), strings.HasPrefix(mt, "video/"):
		return true
	}
	return false
}

// TestMimeAllowList: ?mime= shows inline only types that cannot run
// anything; every other type the client names (multipart/x-mixed-replace,
// text/rdf, html...) is sent in a sandbox as an attachment, and so is a
// file whose extension maps (here or in the host's mime.types) to a type
// that is neither inert nor a document type the sandbox is known to hold.
func TestMimeAllowList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	payload := "--x\r\nContent-Type: text/html\r\n\r\n<script>alert(document.domain)</script>\r\n--x--\r\n"
	writeFile(t, dir, "evil.txt", []byte(payload))
	s := start(t, "-v", dir+"::rw")
	for _, c := range []struct {
		mime   string
		ct     string // "" when 400
		inline bool
	}{
		{mime: "multipart/x-mixed-replace;boundary=x", ct: "multipart/x-mixed-replace", inline: false},
		{mime: "multipart/x-mixed-replace; boundary=\"x\"", ct: "multipart/x-mixed-replace", inline: false},
		{mime: "text/rdf", ct: "text/rdf", inline: false},
		{mime: "text/html", ct: "text/html", inline: false},
		{mime: "TEXT/HTML; charset=utf-8", ct: "text/html; charset=utf-8", inline: false},
		{mime: "application/xhtml+xml", ct: "application/xhtml+xml", inline: false},
		{mime: "image/svg+xml", ct: "image/svg+xml", inline: false},
		{mime: "text/xsl", ct: "text/xsl", inline: false},
		{mime: "application/vnd.mozilla.xul+xml", ct: "application/vnd.mozilla.xul+xml", inline: false},
		{mime: "message/rfc822", ct: "message/rfc822", inline: false},
		{mime: "application/x-shockwave-flash", ct: "application/x-shockwave-flash", inline: false},
		{mime: "application/hta", ct: "application/hta", inline: false},
		{mime: "text/javascript", ct: "text/javascript", inline: false},
		{mime: "text/plain", ct: "text/plain", inline: true},
		{mime: "Text/Plain; Charset=UTF-8", ct: "text/plain; charset=utf-8", inline: true},
		{mime: "text/plain; charset=latin1; foo=bar", ct: "text/plain; charset=latin1", inline: true},
		{mime: "image/png", ct: "image/png", inline: true},
		{mime: "video/mp4", ct: "video/mp4", inline: true},
		{mime: "text/plain; charset=utf-7", ct: "", inline: false},
		{mime: "text/plain; charset=x-nope", ct: "", inline: false},
	} {
		t.Run(c.mime, func(t *testing.T) {
			resp, body := s.do(t, "GET", "/evil.txt?mime="+url.QueryEscape(c.mime), nil)
			if c.ct == "" {
				wantStatus(t, resp, body, http.StatusBadRequest)
				return
			}
			wantStatus(t, resp, body, http.StatusOK)
			h := resp.Header
			if got := h.Get("Content-Type"); got != c.ct {
				t.Errorf("Content-Type = %q, want %q", got, c.ct)
			}
			disp, _, _ := mime.ParseMediaType(h.Get("Content-Disposition"))
			sandbox := strings.Contains(h.Get("Content-Security-Policy"), "sandbox")
			if c.inline && (disp != "inline" || sandbox) {
				t.Errorf("inert type: disposition %q, sandbox %v; want inline, none", disp, sandbox)
			}
			if !c.inline && (disp != "attachment" || !sandbox) {
				t.Errorf("disposition %q, CSP %q; want attachment in a sandbox", disp, h.Get("Content-Security-Policy"))
			}
			if h.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("no nosniff")
			}
		})
	}

	// By extension: whatever type the name maps to (here or in the host's
	// mime.types), see checkPolicy.
	for _, name := range byExtNames {
		t.Run(name, func(t *testing.T) {
			resp, body := s.do(t, "PUT", "/"+name, []byte(payload))
			wantStatus(t, resp, body, http.StatusCreated)
			for _, q := range []string{"", "?dl"} {
				resp, body = s.do(t, "GET", "/"+name+q, nil)
				wantStatus(t, resp, body, http.StatusOK)
				checkPolicy(t, name+q, resp)
			}
		})
	}
}

// byExtNames have extensions that map to active or odd types in common
// mime.types files.
var byExtNames = []string{"a.hta", "a.swf", "a.eml", "a.rdf", "a.xsl", "a.xslt", "a.xul", "a.shtml", "a.xht", "a.xhtml", "a.svgz", "a.html", "a.svg", "a.xml", "a.js", "a.css", "a.mht", "a.vtt", "a.appcache", "a.jnlp", "a.txt", "a.png", "a.mp4"}

// checkPolicy: a body that is not inert is sandboxed, and shown inline
// only when it is a document type the sandbox holds.
func checkPolicy(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	viewable := map[string]bool{"text/html": true, "application/xhtml+xml": true, "image/svg+xml": true, "application/xml": true, "text/xml": true, "text/css": true, "text/javascript": true}
	h := resp.Header
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	disp, _, _ := mime.ParseMediaType(h.Get("Content-Disposition"))
	sandbox := strings.Contains(h.Get("Content-Security-Policy"), "sandbox")
	if !inertType(mt) && !sandbox {
		t.Errorf("%s: Content-Type %q with no sandbox", what, h.Get("Content-Type"))
	}
	if !inertType(mt) && !viewable[mt] && disp != "attachment" {
		t.Errorf("%s: Content-Type %q shown %q, want attachment", what, h.Get("Content-Type"), disp)
	}
	if h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("%s: no nosniff", what)
	}
}

// TestMimeZgetAndTail: a zip member and a ?tail stream get the same
// treatment as a file.
func TestMimeZgetAndTail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var members [][2]string
	for _, n := range byExtNames {
		members = append(members, [2]string{n, "<script>alert(1)</script>"})
	}
	writeFile(t, dir, "z.zip", makeZip(t, members, time.Now()))
	writeFile(t, dir, "log.txt", []byte("line\n"))
	s := start(t, "-v", dir+"::r", "--tail-tmax", "1")
	for _, n := range byExtNames {
		resp, body := s.do(t, "GET", "/z.zip?zget="+n, nil)
		wantStatus(t, resp, body, http.StatusOK)
		checkPolicy(t, "zget "+n, resp)
	}
	resp, body := s.do(t, "GET", "/log.txt?tail&mime="+url.QueryEscape("multipart/x-mixed-replace;boundary=x"), nil)
	wantStatus(t, resp, body, http.StatusOK)
	disp, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Disposition"))
	if disp != "attachment" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("?tail&mime=multipart: %q disposition %q CSP %q", resp.Header.Get("Content-Type"), disp, resp.Header.Get("Content-Security-Policy"))
	}
}
