package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShareCrossSiteUpload: inside a password share, the password a
// browser carries on its own (the share's login cookie, or Basic
// credentials it cached) must not let another site's page upload into the
// share, as everywhere else on the server. A client that sends the
// password itself, or no browser headers, is not affected.
func TestShareCrossSiteUpload(t *testing.T) {
	t.Parallel()
	dir := shareSetup(t)
	s := start(t, shareArgs(dir)...)
	makeShare(t, s, "apw", map[string]any{"k": "wdrop", "vp": []string{"/proj/sub/"}, "pw": "s3cret", "exp": 0, "perms": []string{"read", "write", "delete"}}, 201)
	cross := []string{"Sec-Fetch-Site: cross-site", "Origin: https://evil.example"}
	sameSite := []string{"Sec-Fetch-Site: same-site", "Origin: http://127.0.0.1:8080"}
	for _, tc := range []struct {
		name string
		cred string
		hdr  []string
	}{
		{"cookie cross-site", "Cookie: cppwd=s3cret", cross},
		{"cookie same-site other port", "Cookie: cppwd=s3cret", sameSite},
		{"basic cross-site", basicAuth("x:s3cret"), cross},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ReplaceAll(tc.name, " ", "-") + ".txt"
			body, ct := multipartFiles(t, [2]string{name, "EVIL"})
			resp, rb := s.do(t, "POST", "/shr/wdrop/", body, append([]string{tc.cred, ct}, tc.hdr...)...)
			wantStatus(t, resp, rb, 403)
			// an overwrite by multipart, and a PUT (which a page cannot
			// send cross-site without a preflight, but checked the same)
			writeFile(t, dir, "proj/sub/keep.txt", []byte("KEEP"))
			body, ct = multipartFiles(t, [2]string{"keep.txt", "EVIL"})
			resp, rb = s.do(t, "POST", "/shr/wdrop/?replace", body, append([]string{tc.cred, ct}, tc.hdr...)...)
			wantStatus(t, resp, rb, 403)
			resp, rb = s.do(t, "PUT", "/shr/wdrop/put-"+name, []byte("EVIL"), append([]string{tc.cred}, tc.hdr...)...)
			wantStatus(t, resp, rb, 403)
			if _, err := os.Stat(filepath.Join(dir, "proj", "sub", name)); err == nil {
				t.Errorf("a cross-site upload landed in the share")
			}
			wantFile(t, dir, "proj/sub/keep.txt", []byte("KEEP"))
		})
	}
	// The same requests from the share's own pages, or from curl, work.
	for _, hdr := range [][]string{{"Sec-Fetch-Site: same-origin"}, nil} {
		for _, cred := range []string{"Cookie: cppwd=s3cret", basicAuth("x:s3cret"), "PW: s3cret"} {
			body, ct := multipartFiles(t, [2]string{"ok.txt", "fine"})
			resp, rb := s.do(t, "POST", "/shr/wdrop/", body, append([]string{cred, ct}, hdr...)...)
			wantStatus(t, resp, rb, 201)
		}
	}
	// The share's password in the request itself is no browser's doing.
	body, ct := multipartFiles(t, [2]string{"pw.txt", "fine"})
	resp, rb := s.do(t, "POST", "/shr/wdrop/?pw=s3cret", body, append([]string{ct}, cross...)...)
	wantStatus(t, resp, rb, 201)
	// Reading stays possible from anywhere (GET is not a change).
	resp, rb = s.do(t, "GET", "/shr/wdrop/deep.txt", nil, append([]string{"Cookie: cppwd=s3cret"}, cross...)...)
	wantStatus(t, resp, rb, 200)
}
