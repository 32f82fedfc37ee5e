package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// davOracleProbes are the WebDAV requests a user who may not read tries
// on each name ({} stands for it). PROPPATCH and LOCK act on what exists
// (207 or 404, 200 or 201 or 409), and WebDAV's PUT refuses a taken name,
// a folder and a missing parent: each told a writer what is there.
var davOracleProbes = []oracleProbe{
	{method: "PROPPATCH", path: "/{}", ct: "application/xml", body: `<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><D:getlastmodified>Wed, 02 Jan 2019 03:04:05 GMT</D:getlastmodified></D:prop></D:set></D:propertyupdate>`},
	{method: "PROPPATCH", path: "/{}/", ct: "application/xml", body: `<D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:z"><D:set><D:prop><Z:color>red</Z:color></D:prop></D:set></D:propertyupdate>`},
	{method: "LOCK", path: "/{}", ct: "application/xml", body: lockBody},
	{method: "LOCK", path: "/{}/x.txt", ct: "application/xml", body: lockBody},
	{method: "PUT", path: "/{}/new.txt", body: "NEW"},
}

// TestDAVNoExistenceOracle: a write-only user (named or anonymous) gets
// the same answers from WebDAV's PROPPATCH, LOCK and PUT whether a file,
// a folder or nothing is at the name, and changes nothing that was there:
// no mtime or property set, no lock that would hold off its owner.
func TestDAVNoExistenceOracle(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		hdr  []string
	}{
		{"write-only user", []string{"-a", "wo:pw-w", "-a", "rw:pw-rw", "::w,wo:rwmd,rw"}, []string{"PW: pw-w"}},
		{"anonymous write-only", []string{"-a", "rw:pw-rw", "::w:rwmd,rw"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := oracleSetup(t)
			old := time.Unix(1e9, 0)
			os.Chtimes(filepath.Join(dir, probeFile), old, old)
			args := append([]string{}, tc.args[:len(tc.args)-1]...)
			s := start(t, append(args, "-v", dir+tc.args[len(tc.args)-1])...)
			names := []string{probeFile, probeFolder, probeMissing}
			for _, p := range davOracleProbes {
				names := names
				if p.method == "PUT" {
					// Into a file is refused by every PUT (a file is on the
					// way), as copyparty does: inherent to making folders.
					names = names[1:]
				}
				var first oracleAnswer
				for i, name := range names {
					a := askProbe(t, s, p, name, "", append([]string{davUA}, tc.hdr...)...)
					a.Body = freeSpaceText.ReplaceAllString(a.Body, "")
					if i == 0 {
						first = a
					} else if a != first {
						t.Errorf("%s %s tells %s from %s:\n  %+v\n  %+v", p.method, p.path, name, names[0], first, a)
					}
				}
			}
			if fi, err := os.Stat(filepath.Join(dir, probeFile)); err != nil || !fi.ModTime().Equal(old) {
				t.Errorf("a write-only PROPPATCH changed %s: %v %v", probeFile, fi.ModTime(), err)
			}
			// Nothing is locked against its owner.
			for _, p := range []string{"/" + probeFile, "/" + probeFolder + "/a.txt"} {
				resp, body := davReq(t, s, "DELETE", p, "", "PW: pw-rw")
				if resp.StatusCode != http.StatusNoContent {
					t.Errorf("DELETE %s by its owner after the write-only probes: %d %s", p, resp.StatusCode, body)
				}
			}
			resp, body := davReq(t, s, "PROPFIND", "/"+probeFolder+"/", "", "PW: pw-rw", "Depth: 0")
			if resp.StatusCode != http.StatusMultiStatus || strings.Contains(string(body), "urn:z") {
				t.Errorf("PROPFIND %s by its owner: %d, a write-only user's property there: %s", probeFolder, resp.StatusCode, body)
			}
		})
	}
}
