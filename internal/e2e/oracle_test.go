package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Someone who may not read learns nothing about what exists: for every
// request a user without r can make, an existing file, an existing folder
// and a missing name get the same status, the same body and the same
// Location (with the name itself taken out). The exceptions are what the
// permission grants: g serves a file by its exact URL (without fk), h a
// folder's index.html.

const (
	probeFile    = "exfile.txt"
	probeFolder  = "exdir"
	probeMissing = "nothere"
)

type oracleProbe struct {
	method, path, ct, body string
}

// oracleProbes are the requests tried on each name ({} stands for it).
var oracleProbes = []oracleProbe{
	{method: "GET", path: "/{}"},
	{method: "GET", path: "/{}/"},
	{method: "GET", path: "/{}?ls"},
	{method: "GET", path: "/{}/?ls"},
	{method: "GET", path: "/{}?ls=t"},
	{method: "GET", path: "/{}/?ls=v"},
	{method: "GET", path: "/{}?th"},
	{method: "GET", path: "/{}/?th"},
	{method: "GET", path: "/{}?txt"},
	{method: "GET", path: "/{}?txt=shift_jis"},
	{method: "GET", path: "/{}?zls"},
	{method: "GET", path: "/{}?zget=a.txt"},
	{method: "GET", path: "/{}?v"},
	{method: "GET", path: "/{}?tail"},
	{method: "GET", path: "/{}?tar"},
	{method: "GET", path: "/{}/?zip"},
	{method: "GET", path: "/{}?dl"},
	{method: "GET", path: "/{}?mime=text/plain"},
	{method: "GET", path: "/{}?tree"},
	{method: "GET", path: "/{}/?tree=."},
	{method: "GET", path: "/{}?k=AAAAAAAA"},
	{method: "HEAD", path: "/{}"},
	{method: "HEAD", path: "/{}/"},
	{method: "OPTIONS", path: "/{}"},
	{method: "POST", path: "/{}/?tar", ct: "application/json", body: `["a.txt"]`},
	{method: "POST", path: "/{}?zip", ct: "application/json", body: `["a.txt"]`},
	{method: "POST", path: "/{}", ct: "application/x-www-form-urlencoded", body: "msg=x"},
}

// oracleAnswer is what a client can tell apart, with the name replaced by {}.
type oracleAnswer struct {
	Status   int
	Body     string
	Location string
	Type     string
}

func askProbe(t *testing.T, s *server, p oracleProbe, name, prefix string, hdr ...string) oracleAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var body io.Reader
	if p.body != "" {
		body = strings.NewReader(p.body)
	}
	req, err := http.NewRequestWithContext(ctx, p.method, s.URL+prefix+strings.ReplaceAll(p.path, "{}", name), body)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(k, strings.TrimSpace(v))
	}
	if p.ct != "" {
		req.Header.Set("Content-Type", p.ct)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", p.method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body) // a ?tail that streams ends at the deadline
	norm := func(s string) string {
		// the disk's free space moves while other tests write: it tells
		// nothing about the name, so it is not compared
		s = freeSpaceText.ReplaceAllString(s, "N free of N")
		s = scriptNonce.ReplaceAllString(s, `nonce="N"`) // fresh on every page
		return strings.ReplaceAll(s, name, "{}")
	}
	return oracleAnswer{Status: resp.StatusCode, Body: norm(string(b)), Location: norm(resp.Header.Get("Location")), Type: resp.Header.Get("Content-Type")}
}

// freeSpaceText matches srvinf's "12.3 GiB free of 40 GiB" wherever a page shows it.
var freeSpaceText = regexp.MustCompile(`[0-9.]+ ?[KMGTPE]?i?B free of [0-9.]+ ?[KMGTPE]?i?B`)

// scriptNonce is the page's per-response script nonce.
var scriptNonce = regexp.MustCompile(`nonce="[0-9A-Za-z_-]+"`)

// wantSameAnswers runs every probe on the names and wants equal answers.
func wantSameAnswers(t *testing.T, s *server, prefix string, names []string, hdr ...string) {
	t.Helper()
	for _, p := range oracleProbes {
		var first oracleAnswer
		for i, name := range names {
			a := askProbe(t, s, p, name, prefix, hdr...)
			if a.Status < 300 && p.method != "OPTIONS" && strings.Contains(a.Body, "CONTENT") {
				t.Errorf("%s %s%s: %d serves the file to a user who may not read it", p.method, prefix, strings.ReplaceAll(p.path, "{}", name), a.Status)
			}
			if i == 0 {
				first = a
				continue
			}
			if a != first {
				t.Errorf("%s %s%s tells %s from %s:\n  %s: %+v\n  %s: %+v", p.method, prefix, p.path, name, names[0],
					names[0], first, name, a)
			}
		}
	}
}

func oracleSetup(t *testing.T) string {
	dir := t.TempDir()
	writeFile(t, dir, probeFile, []byte("FILE-CONTENT"))
	writeFile(t, dir, probeFolder+"/a.txt", []byte("DIR-CONTENT"))
	writeFile(t, dir, probeFolder+"/sub/b.txt", []byte("DIR-CONTENT"))
	writeFile(t, dir, "other/dup.bin", []byte("DUP-CONTENT-0123456789"))
	return dir
}

func TestNoExistenceOracle(t *testing.T) {
	t.Parallel()
	dir := oracleSetup(t)
	s := start(t, "-a", "wo:pw-w", "-a", "gg:pw-g", "-a", "hh:pw-h", "-a", "rw:pw-rw",
		"-v", dir+"::w,wo:g,gg:h,hh:rw,rw", "--shr", "/shr/")
	all := []string{probeFile, probeFolder, probeMissing}
	t.Run("write-only user", func(t *testing.T) { wantSameAnswers(t, s, "", all, "PW: pw-w") })
	t.Run("g user, folders", func(t *testing.T) { wantSameAnswers(t, s, "", []string{probeFolder, probeMissing}, "PW: pw-g") })
	t.Run("h user, folders without index.html", func(t *testing.T) { wantSameAnswers(t, s, "", []string{probeFolder, probeMissing}, "PW: pw-h") })
	t.Run("anonymous", func(t *testing.T) { wantSameAnswers(t, s, "", all) })

	anon := start(t, "-v", oracleSetup(t)+"::w")
	t.Run("anonymous write-only", func(t *testing.T) { wantSameAnswers(t, anon, "", all) })

	fk := start(t, "-a", "gg:pw-g", "-v", oracleSetup(t)+"::g,gg:c,fk")
	t.Run("g user with fk, without the key", func(t *testing.T) { wantSameAnswers(t, fk, "", all, "PW: pw-g") })

	// A write-only share: its visitors may not read either.
	makeShare(t, s, "pw-rw", map[string]any{"k": "drop", "vp": []string{"/"}, "perms": []string{"write"}}, 201)
	t.Run("write-only share visitor", func(t *testing.T) { wantSameAnswers(t, s, "/shr/drop", all) })

	// Creating a share: a creator who may not read learns nothing either.
	t.Run("share creation", func(t *testing.T) {
		sw := start(t, "-a", "wo:pw-w", "-v", oracleSetup(t)+"::w,wo")
		for _, body := range []string{
			`{"k":"k-{}","vp":["/{}/"],"perms":["write"]}`,
			`{"k":"k2-{}","vp":["/{}"],"perms":["write"]}`,
			`{"k":"k3-{}","vp":["/{}/a.txt","/{}/b.txt"],"perms":["write"]}`,
			`{"k":"k4-{}","vp":["/{}/"],"perms":["read"]}`,
		} {
			var first oracleAnswer
			for i, name := range []string{probeFolder, probeMissing} {
				a := askProbe(t, sw, oracleProbe{method: "POST", path: "/?share", ct: "text/plain", body: strings.ReplaceAll(body, "{}", name)}, name, "", "PW: pw-w")
				if i == 0 {
					first = a
				} else if a != first {
					t.Errorf("share %s tells %s from %s:\n  %+v\n  %+v", body, probeFolder, probeMissing, first, a)
				}
			}
		}
	})

	// up2k: a handshake tells a writer nothing of the content or names
	// already there, and nothing of where other content lies.
	t.Run("up2k handshakes", func(t *testing.T) {
		hs := func(srv *server, folder, name string, data []byte) (int, handshakeReply, string) {
			f := newUp2kFile(data)
			b, _ := json.Marshal(map[string]any{"name": name, "size": len(data), "lmod": 1700000000, "hash": f.hashes})
			resp, rb := srv.do(t, "POST", folder, b, "Content-Type: application/json", "PW: pw-w")
			var rep handshakeReply
			json.Unmarshal(rb, &rep)
			return resp.StatusCode, rep, string(rb)
		}
		var shapes []string
		for _, name := range []string{probeFolder, probeMissing} {
			code, rep, raw := hs(s, "/"+name+"/", "u.bin", []byte("UP2K-"+name))
			shapes = append(shapes, fmt.Sprintf("%d %s %s %d", code, rep.Name, strings.ReplaceAll(rep.Purl, name, "{}"), len(rep.Need)))
			if code != 200 {
				t.Errorf("handshake into /%s/: %d %s", name, code, raw)
			}
		}
		if shapes[0] != shapes[1] {
			t.Errorf("handshakes tell %s from %s: %q", probeFolder, probeMissing, shapes)
		}
		// Content that exists elsewhere in the volume is still asked for.
		dup := []byte("DUP-CONTENT-0123456789")
		if code, rep, raw := hs(s, "/drop1/", "d.bin", dup); code != 200 || len(rep.Need) != 1 {
			t.Errorf("a write-only handshake for content already in the volume: %d %s, want its chunk asked for", code, raw)
		}
		// Nor does a refusal name where it lies.
		nd := start(t, "-a", "wo:pw-w", "-a", "rw:pw-rw", "-v", oracleSetup(t)+"::w,wo:rw,rw:c,nodupe")
		f := newUp2kFile(dup)
		up2kUpload(t, nd, "/other2/", "dup2.bin", f, 1600000000, 1, "PW: pw-rw")
		if _, _, raw := hs(nd, "/drop2/", "d.bin", dup); strings.Contains(raw, "other") || strings.Contains(raw, "dup") {
			t.Errorf("nodupe answer names the existing file to a write-only user: %s", raw)
		}
	})
}
