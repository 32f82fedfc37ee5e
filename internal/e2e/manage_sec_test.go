package e2e

import (
	"net/http"
	"strings"
	"testing"
)

// TestDAVLockStaysInItsVolume: a WebDAV lock is a right over one volume's
// files. A user who may write the volume mounted at / takes a Depth:
// infinity lock on its top; a volume mounted below it (/priv) is another
// account's, which the first may not even read. The lock must not cover
// /priv: its owner keeps writing there (PUT, MKCOL, DELETE, LOCK), and
// its PROPFIND shows no lock of the other account (with its token).
func TestDAVLockStaysInItsVolume(t *testing.T) {
	t.Parallel()
	top, priv := t.TempDir(), t.TempDir()
	writeFile(t, priv, "old.txt", []byte("old"))
	s := start(t, "-a", "eve:evepw", "-a", "bob:bobpw", "-v", top+"::rwmd,eve", "-v", priv+":priv:rwmd,bob")
	eve, bob := basicAuth("eve:evepw"), basicAuth("bob:bobpw")

	resp, body := davReq(t, s, "LOCK", "/", lockBody, eve, "Depth: infinity", "Timeout: Second-3600")
	wantStatus(t, resp, body, http.StatusOK)
	tok := resp.Header.Get("Lock-Token")
	if tok == "" {
		t.Fatal("no lock token")
	}

	resp, body = davReq(t, s, "PUT", "/priv/new.txt", "new", bob, davUA)
	wantStatus(t, resp, body, http.StatusCreated)
	resp, body = davReq(t, s, "MKCOL", "/priv/col", "", bob)
	wantStatus(t, resp, body, http.StatusCreated)
	resp, body = davReq(t, s, "DELETE", "/priv/old.txt", "", bob)
	wantStatus(t, resp, body, http.StatusNoContent)
	resp, body = davReq(t, s, "PROPFIND", "/priv/", propfindAll, bob, "Depth: 1")
	wantStatus(t, resp, body, http.StatusMultiStatus)
	if strings.Contains(string(body), strings.Trim(tok, "<>")) {
		t.Errorf("bob's PROPFIND of /priv shows eve's lock token: %s", body)
	}
	resp, body = davReq(t, s, "LOCK", "/priv/new.txt", lockBody, bob, "Depth: 0")
	wantStatus(t, resp, body, http.StatusOK)
	// eve's lock still holds in her own volume.
	resp, body = davReq(t, s, "PUT", "/x.txt", "x", bob, davUA)
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusLocked {
		t.Errorf("PUT under eve's lock by bob: %d %s", resp.StatusCode, body)
	}
	resp, body = davReq(t, s, "PUT", "/x.txt", "x", eve, davUA)
	if resp.StatusCode != http.StatusLocked {
		t.Errorf("PUT under eve's lock without its token: %d %s, want 423", resp.StatusCode, body)
	}
	resp, body = davReq(t, s, "PUT", "/x.txt", "x", eve, davUA, "If: ("+tok+")")
	wantStatus(t, resp, body, http.StatusCreated)
}
