package http

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The per-entry cost of a PROPFIND Depth 1: counts, not timings.

// propfindAllocs is the allocations of one PROPFIND Depth 1 of the folder
// d with body, served in this goroutine.
func propfindAllocs(t *testing.T, s *Server, d, body string, want int) float64 {
	t.Helper()
	return testing.AllocsPerRun(5, func() {
		r := httptest.NewRequest("PROPFIND", "/"+d+"/", strings.NewReader(body))
		r.Header.Set("Depth", "1")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != http.StatusMultiStatus {
			t.Fatalf("PROPFIND: %d %s", w.Code, w.Body)
		}
		if n := strings.Count(w.Body.String(), "<D:response>"); n != want+1 {
			t.Fatalf("PROPFIND listed %d, want %d", n, want+1)
		}
	})
}

// TestPropfindPerEntryCost: each member of a PROPFIND Depth 1 costs the
// folder read's own work, not an open, stat and close of the member (a
// named-property request as a bench or Finder sends) nor in addition an
// xattr read through an opened file (allprop, rclone's request with
// oc:checksums). Measured as the allocations per extra member, which an
// open per member (an *os.File, its name, its FileInfo, the root's
// resolution) multiplies.
func TestPropfindPerEntryCost(t *testing.T) {
	s, dir := newTestServer(t, "rwd")
	for _, n := range []int{100, 300} {
		d := filepath.Join(dir, fmt.Sprint("n", n))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%04d.bin", i)), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name, body string
		max        float64
	}{
		{"named", `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:resourcetype/><D:getcontentlength/><D:getlastmodified/><D:getetag/></D:prop></D:propfind>`, 12},
		{"allprop", "", 16},
		{"rclone", `<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><d:displayname/><d:getlastmodified/><d:getcontentlength/><d:resourcetype/><d:getcontenttype/><oc:checksums/></d:prop></d:propfind>`, 16},
	} {
		a := propfindAllocs(t, s, "n100", tc.body, 100)
		b := propfindAllocs(t, s, "n300", tc.body, 300)
		per := (b - a) / 200
		t.Logf("%s: %.1f allocations per entry (%.0f for 100, %.0f for 300)", tc.name, per, a, b)
		if per > tc.max {
			t.Errorf("%s: %.1f allocations per entry, want at most %.0f: each member is opened or stated again", tc.name, per, tc.max)
		}
	}
}

// FuzzAppendHref: the href a PROPFIND writes for a member, built in
// place, is byte for byte the XML-escaped davURL; writeXMLText is
// xml.EscapeText.
func FuzzAppendHref(f *testing.F) {
	f.Add("", "a/b", true)
	f.Add("/pre&'", "x&y'z/ü x/%41:", false)
	f.Add("", "", true)
	f.Add("<l>", "d/", true)
	f.Add("\xff", "\t\x00/\"", false)
	f.Fuzz(func(t *testing.T, loc, p string, dir bool) {
		q := &req{loc: loc}
		var want strings.Builder
		xml.EscapeText(&want, []byte(q.davURL(p, dir)))
		if got := string(q.appendHref([]byte("pre"), p, dir)); got != "pre"+want.String() {
			t.Fatalf("appendHref(%q, %q, %v) = %q, want %q", loc, p, dir, got, "pre"+want.String())
		}
		var a, b bytes.Buffer
		xml.EscapeText(&a, []byte(p))
		w := bufio.NewWriter(&b)
		writeXMLText(w, p)
		w.Flush()
		if a.String() != b.String() {
			t.Fatalf("writeXMLText(%q) = %q, want %q", p, b.String(), a.String())
		}
	})
}
