//go:build linux

package e2e

import (
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Dead WebDAV properties (store/davprops.go): kept in an extended
// attribute of the file, served back namespace-correctly, moved, copied
// and deleted with the file, bounded.

type davMultistatus struct {
	Responses []struct {
		Href      string `xml:"href"`
		Propstats []struct {
			Prop struct {
				Any []davAnyProp `xml:",any"`
			} `xml:"prop"`
			Status string `xml:"status"`
		} `xml:"propstat"`
	} `xml:"response"`
}

type davAnyProp struct {
	XMLName xml.Name
	Inner   string `xml:",innerxml"`
}

// davProps PROPFINDs p (Depth 0) with body and returns each property the
// reply gives with status 200, "{space}local" → its inner XML.
func davProps(t *testing.T, s *server, p, body, auth string) map[string]string {
	t.Helper()
	resp, b := davReq(t, s, "PROPFIND", p, body, auth, "Depth: 0")
	wantStatus(t, resp, b, http.StatusMultiStatus)
	var ms davMultistatus
	if err := xml.Unmarshal(b, &ms); err != nil {
		t.Fatalf("PROPFIND reply is not XML: %v\n%s", err, b)
	}
	out := map[string]string{}
	for _, r := range ms.Responses {
		for _, ps := range r.Propstats {
			if !strings.Contains(ps.Status, " 200 ") {
				continue
			}
			for _, a := range ps.Prop.Any {
				out["{"+a.XMLName.Space+"}"+a.XMLName.Local] = a.Inner
			}
		}
	}
	return out
}

const propsAsk = `<D:propfind xmlns:D="DAV:" xmlns:Z="urn:z"><D:prop><Z:color/><nons xmlns=""/><Z:nest/><Z:missing/><D:getcontentlength/></D:prop></D:propfind>`

// wantDead checks the dead properties TestDAVDeadProps sets at p.
func wantDead(t *testing.T, s *server, p, auth string) {
	t.Helper()
	got := davProps(t, s, p, propsAsk, auth)
	if got["{urn:z}color"] != "blue" || got["{}nons"] != "x &amp; y" {
		t.Fatalf("%s: dead properties %q", p, got)
	}
	if _, ok := got["{urn:z}missing"]; ok {
		t.Errorf("%s: a property never set is served", p)
	}
	// The nested value's prefix was declared on the request's root: the
	// value served declares it itself, so it means the same.
	d := xml.NewDecoder(strings.NewReader("<w>" + got["{urn:z}nest"] + "</w>"))
	var names []string
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: nested value %q: %v", p, got["{urn:z}nest"], err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local != "w" {
			names = append(names, se.Name.Space+" "+se.Name.Local)
			for _, a := range se.Attr {
				if a.Name.Space != "xmlns" && a.Name.Local != "xmlns" {
					names = append(names, "@"+a.Name.Space+" "+a.Name.Local+"="+a.Value)
				}
			}
		}
		if cd, ok := tok.(xml.CharData); ok && strings.TrimSpace(string(cd)) != "" {
			names = append(names, "text "+string(cd))
		}
	}
	if strings.Join(names, "|") != "urn:q inner|@ attr=1|@urn:q qa=2|text deep" {
		t.Errorf("%s: nested value %q decodes to %q", p, got["{urn:z}nest"], names)
	}
}

func TestDAVDeadProps(t *testing.T) {
	dir, dir2 := t.TempDir(), t.TempDir()
	auth, rauth := basicAuth("u:pw"), basicAuth("r:pr")
	s := start(t, "-a", "u:pw", "-a", "r:pr", "-v", dir+"::rwmd,u:r,r", "-v", dir2+":v2:rwmd,u")
	resp, body := davReq(t, s, "PUT", "/a.txt", "a", auth, davUA)
	wantStatus(t, resp, body, http.StatusCreated)
	set := `<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:z" xmlns:Q="urn:q"><D:set><D:prop>` +
		`<Z:color>red</Z:color><nons xmlns="">x &amp; y</nons><Z:nest><Q:inner attr="1" Q:qa="2">deep</Q:inner></Z:nest>` +
		`</D:prop></D:set><D:set><D:prop><Z:color>blue</Z:color><Z:gone>1</Z:gone></D:prop></D:set><D:remove><D:prop><Z:gone/></D:prop></D:remove></D:propertyupdate>`
	resp, body = davReq(t, s, "PROPPATCH", "/a.txt", set, auth)
	wantStatus(t, resp, body, http.StatusMultiStatus)
	if strings.Count(string(body), "200 OK") != 6 {
		t.Fatalf("PROPPATCH: %s", body)
	}
	wantDead(t, s, "/a.txt", auth)
	if v, err := getxattr(filepath.Join(dir, "a.txt"), "user.hoard.props"); err != nil || len(v) == 0 {
		t.Errorf("no user.hoard.props on the file: %v", err)
	}
	// A reader reads them; allprop and propname list them.
	wantDead(t, s, "/a.txt", rauth)
	all := davProps(t, s, "/a.txt", `<D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>`, auth)
	if all["{urn:z}color"] != "blue" || all["{DAV:}getcontentlength"] != "1" || len(all) < 4 {
		t.Errorf("allprop: %q", all)
	}
	names := davProps(t, s, "/a.txt", `<D:propfind xmlns:D="DAV:"><D:propname/></D:propfind>`, auth)
	for _, n := range []string{"{urn:z}color", "{}nons", "{urn:z}nest"} {
		if v, ok := names[n]; !ok || v != "" {
			t.Errorf("propname: %s: %q (%q)", n, v, names)
		}
	}
	if _, ok := names["{urn:z}gone"]; ok {
		t.Error("a removed property is listed")
	}
	// A reader may not change them.
	resp, body = davReq(t, s, "PROPPATCH", "/a.txt", set, rauth)
	wantStatus(t, resp, body, http.StatusForbidden)

	// They go where the file goes: move, copy (same volume and into
	// another one, which copies the bytes), and a folder's with it.
	resp, body = davReq(t, s, "MOVE", "/a.txt", "", auth, "Destination: "+s.URL+"/b.txt")
	wantStatus(t, resp, body, http.StatusCreated)
	wantDead(t, s, "/b.txt", auth)
	resp, body = davReq(t, s, "COPY", "/b.txt", "", auth, "Destination: "+s.URL+"/v2/c.txt")
	wantStatus(t, resp, body, http.StatusCreated)
	wantDead(t, s, "/v2/c.txt", auth)
	wantDead(t, s, "/b.txt", auth)
	resp, body = davReq(t, s, "MKCOL", "/d", "", auth)
	wantStatus(t, resp, body, http.StatusCreated)
	for _, p := range []string{"/d", "/d/sub"} {
		if p != "/d" {
			resp, body = davReq(t, s, "MKCOL", p, "", auth)
			wantStatus(t, resp, body, http.StatusCreated)
		}
		resp, body = davReq(t, s, "PROPPATCH", p, set, auth)
		wantStatus(t, resp, body, http.StatusMultiStatus)
	}
	resp, body = davReq(t, s, "COPY", "/d", "", auth, "Destination: "+s.URL+"/v2/d2")
	wantStatus(t, resp, body, http.StatusCreated)
	wantDead(t, s, "/v2/d2", auth)
	wantDead(t, s, "/v2/d2/sub", auth)
	resp, body = davReq(t, s, "MOVE", "/v2/d2", "", auth, "Destination: "+s.URL+"/d3")
	wantStatus(t, resp, body, http.StatusCreated)
	wantDead(t, s, "/d3/sub", auth)

	// They go when the file goes: a new file at the name has none.
	resp, body = davReq(t, s, "DELETE", "/b.txt", "", auth)
	wantStatus(t, resp, body, http.StatusNoContent)
	resp, body = davReq(t, s, "PUT", "/b.txt", "b", auth, davUA)
	wantStatus(t, resp, body, http.StatusCreated)
	if got := davProps(t, s, "/b.txt", propsAsk, auth); len(got) != 1 {
		t.Errorf("a new file at a deleted file's name has its properties: %q", got)
	}

	// Bounded: too many, or too large, is 507 for each dead property,
	// and nothing is changed.
	var many strings.Builder
	for i := range 300 {
		many.WriteString("<Z:p" + strings.Repeat("x", i%3) + itoa(i) + ">v</Z:p" + strings.Repeat("x", i%3) + itoa(i) + ">")
	}
	big := strings.Repeat("0123456789abcdef", 5000)
	for name, props := range map[string]string{"many": many.String(), "large": "<Z:big>" + big + "</Z:big>"} {
		resp, body = davReq(t, s, "PROPPATCH", "/b.txt", `<D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:z"><D:set><D:prop><Z:color>green</Z:color>`+props+`</D:prop></D:set></D:propertyupdate>`, auth)
		wantStatus(t, resp, body, http.StatusMultiStatus)
		if !strings.Contains(string(body), "507 Insufficient Storage") || strings.Contains(string(body), "200 OK") {
			t.Errorf("%s: %.300s", name, body)
		}
		if got := davProps(t, s, "/b.txt", propsAsk, auth); len(got) != 1 {
			t.Errorf("%s: a refused PROPPATCH set properties: %q", name, got)
		}
	}
}

func itoa(i int) string {
	return strings.TrimLeft(string(rune('0'+i/100))+string(rune('0'+i/10%10))+string(rune('0'+i%10)), "")
}

func getxattr(p, name string) ([]byte, error) {
	buf := make([]byte, 1<<16)
	n, err := syscall.Getxattr(p, name, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// TestUp2kUmodIndexed: an up2k handshake with umod for content already at
// its path sets the file's mtime, and search follows at once (store's
// Touched event), as for a WebDAV PROPPATCH.
func TestUp2kUmodIndexed(t *testing.T) {
	dir := t.TempDir()
	auth := basicAuth("u:pw")
	s := start(t, "-a", "u:pw", "-v", dir+"::rwmd,u", "-e2dsa")
	waitReady(t, s, auth)
	f := newUp2kFile([]byte("umod content"))
	old := time.Date(2017, 7, 14, 2, 40, 0, 0, time.UTC).Unix()
	up2kUpload(t, s, "/", "u.txt", f, old, 1, auth)
	waitAllHits(t, s, "date:2017-07-14", []string{"/u.txt"}, auth)
	later := time.Date(2019, 1, 2, 3, 4, 5, 0, time.UTC).Unix()
	up2kHandshake(t, s, "/", "u.txt", f, later, map[string]any{"umod": true}, auth)
	if fi, err := os.Stat(filepath.Join(dir, "u.txt")); err != nil || fi.ModTime().Unix() != later {
		t.Fatalf("umod did not set the mtime: %v %v", fi, err)
	}
	waitAllHits(t, s, "date:2019-01-02", []string{"/u.txt"}, auth)
}
