package e2e

import (
	"testing"
)

// TestCrossSiteOverwriteAnonymous: where anonymous users hold d (a LAN
// server open to everyone), another site's page must not destroy files
// through them. ?delete and ?move are refused cross-site whoever asks
// (manage.go); an upload that overwrites (?replace) or appends (?apnd),
// the d-permission half of an upload, and an up2k handshake with replace,
// reach the same loss, so they are refused (or lose their replace) the
// same way. A plain new upload stays possible from anywhere, as before.
func TestCrossSiteOverwriteAnonymous(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rwmd")
	cross := []string{"Sec-Fetch-Site: cross-site", "Origin: https://evil.example"}
	keep := []byte("KEEP")

	// what a foreign page's <form enctype=multipart/form-data> can send
	writeFile(t, dir, "a.txt", keep)
	body, ct := multipartFiles(t, [2]string{"a.txt", "EVIL"})
	resp, rb := s.do(t, "POST", "/?replace", body, append([]string{ct}, cross...)...)
	wantStatus(t, resp, rb, 403)
	wantFile(t, dir, "a.txt", keep)

	// a text/plain form's body is a handshake: an empty file needs no
	// chunk (which a page cannot post without a preflight)
	writeFile(t, dir, "b.txt", keep)
	resp, rb = postHandshake(t, s, "/", map[string]any{"name": "b.txt", "size": 0, "hash": []string{}, "replace": true}, append([]string{"Content-Type: text/plain"}, cross...)...)
	if resp.StatusCode == 200 {
		// refused, or taken without its replace: a new name
		wantFile(t, dir, "b.txt", keep)
	} else {
		wantStatus(t, resp, rb, 403)
	}
	wantFile(t, dir, "b.txt", keep)

	// The same from the server's own page, or from curl, overwrites.
	for i, hdr := range [][]string{{"Sec-Fetch-Site: same-origin"}, nil} {
		body, ct = multipartFiles(t, [2]string{"a.txt", "NEW" + string(rune('0'+i))})
		resp, rb = s.do(t, "POST", "/?replace", body, append([]string{ct}, hdr...)...)
		wantStatus(t, resp, rb, 201)
		wantFile(t, dir, "a.txt", []byte("NEW"+string(rune('0'+i))))
	}
	writeFile(t, dir, "c.txt", keep)
	resp, rb = postHandshake(t, s, "/", map[string]any{"name": "c.txt", "size": 0, "hash": []string{}, "replace": true}, "Content-Type: text/plain", "Sec-Fetch-Site: same-origin")
	wantStatus(t, resp, rb, 200)
	wantFile(t, dir, "c.txt", nil)

	// A new file from another site is still taken (nothing is lost).
	body, ct = multipartFiles(t, [2]string{"new.txt", "hello"})
	resp, rb = s.do(t, "POST", "/", body, append([]string{ct}, cross...)...)
	wantStatus(t, resp, rb, 201)
	wantFile(t, dir, "new.txt", []byte("hello"))
}
