package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReverseProxyNginxTLS: a real nginx terminates TLS (a certificate
// the test makes) and proxies /files/ to hoard from the only trusted
// address. Every URL hoard hands back in PUT, multipart and up2k replies,
// listings, shares and search is https, carries the prefix and answers
// 200 through nginx; ?ru names the client behind nginx; the cookie hoard
// sets is Secure. The same headers sent straight to hoard from an
// untrusted address are ignored.
func TestReverseProxyNginxTLS(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-a", "boss:bpw", "-v", dir+"::rw,*:A,boss", "-e2dsa", "--xff-src", "127.0.0.2/32", "--rp-loc", "/files")
	cdir := t.TempDir()
	cert, key := filepath.Join(cdir, "cert.pem"), filepath.Join(cdir, "key.pem")
	pool := tlsCert(t, cert, key, 7)
	ngx := startNginx(t, s, cert, key, pool)
	base := ngx.base
	if !strings.HasPrefix(base, "https://") {
		t.Fatalf("nginx base %q", base)
	}

	// PUT: Location and reply.
	resp, body := ngx.do("PUT", base+"/files/a.txt", "hello")
	wantStatus(t, resp, body, 201)
	if loc := resp.Header.Get("Location"); loc != base+"/files/a.txt" || !strings.Contains(string(body), loc) {
		t.Fatalf("PUT through TLS nginx: Location %q, reply %q", loc, body)
	}
	if got := ngx.follow(resp.Header.Get("Location")); string(got) != "hello" {
		t.Fatalf("PUT's URL gave %q", got)
	}
	resp, body = ngx.do("PUT", base+"/files/sub/c.txt", "sea")
	wantStatus(t, resp, body, 201)

	// Multipart with ?j: its URL.
	mp, ct := multipartFiles(t, [2]string{"b.txt", "bee"})
	resp, body = ngx.do("POST", base+"/files/?j", string(mp), ct)
	wantStatus(t, resp, body, 201)
	var mpr struct {
		Files []struct {
			URL string `json:"url"`
		} `json:"files"`
	}
	if err := json.Unmarshal(body, &mpr); err != nil || len(mpr.Files) != 1 {
		t.Fatalf("multipart reply: %v %s", err, body)
	}
	if got := ngx.follow(mpr.Files[0].URL); string(got) != "bee" {
		t.Fatalf("multipart URL gave %q", got)
	}

	// up2k: the handshake's purl takes the chunks through nginx.
	f := newUp2kFile(randomBytes(2<<20 + 9))
	hs, _ := json.Marshal(map[string]any{"name": "u.bin", "size": len(f.data), "lmod": 1600000000, "hash": f.hashes})
	resp, body = ngx.do("POST", base+"/files/", string(hs), "Content-Type: application/json")
	wantStatus(t, resp, body, 200)
	var rep handshakeReply
	json.Unmarshal(body, &rep)
	if rep.Purl != "/files/" || len(rep.Hash) != len(f.hashes) {
		t.Fatalf("handshake through nginx: %s", body)
	}
	for i, h := range f.hashes {
		resp, body = ngx.do("POST", base+escapePurl(rep.Purl), string(f.chunk(i)), "Content-Type: application/octet-stream", "X-Up2k-Wark: "+rep.Wark, "X-Up2k-Hash: "+h)
		if resp.StatusCode != 200 || string(body) != "thank" {
			t.Fatalf("chunk %d through nginx: %d %s", i, resp.StatusCode, body)
		}
	}
	if got := ngx.follow(base + "/files/u.bin"); string(got) != string(f.data) {
		t.Fatal("the up2k upload through nginx differs")
	}

	// Listing: every href leads back.
	resp, body = ngx.do("GET", base+"/files/?ls", "")
	wantStatus(t, resp, body, 200)
	var ls struct {
		Dirs, Files []struct {
			Href string `json:"href"`
		}
	}
	if err := json.Unmarshal(body, &ls); err != nil || len(ls.Files) != 3 || len(ls.Dirs) != 1 {
		t.Fatalf("listing: %v %s", err, body)
	}
	for _, e := range append(ls.Files, ls.Dirs...) {
		h := e.Href
		if !strings.HasPrefix(h, "/") && !strings.Contains(h, "://") {
			h = "/files/" + h
		}
		ngx.follow(h)
	}

	// A share link: https, prefixed, and it leads to the file.
	sb, _ := json.Marshal(map[string]any{"k": "tk", "vp": []string{"/sub/"}, "pw": "", "exp": "60", "perms": []string{"read"}})
	resp, body = ngx.do("POST", base+"/files/?share", string(sb), "PW: bpw", "Content-Type: text/plain")
	wantStatus(t, resp, body, 201)
	link := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(body)), "created share:"))
	if link != base+"/files/shr/tk/" {
		t.Fatalf("share link %q, want %s/files/shr/tk/", link, base)
	}
	if got := ngx.follow(link + "c.txt"); string(got) != "sea" {
		t.Fatalf("share gave %q", got)
	}

	// Search: each href leads back.
	var hits struct {
		Hits []struct{ Href string } `json:"hits"`
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, body = ngx.do("POST", base+"/files/?srch", `{"q":"txt"}`, "Content-Type: application/json")
		json.Unmarshal(body, &hits)
		if resp.StatusCode == 200 && len(hits.Hits) == 3 || time.Now().After(deadline) {
			break
		}
	}
	if len(hits.Hits) != 3 {
		t.Fatalf("search through nginx: %d %s", resp.StatusCode, body)
	}
	for _, h := range hits.Hits {
		ngx.follow(h.Href)
	}

	// ?ru: the client behind nginx.
	resp, body = ngx.do("GET", base+"/files/?ru&j", "", "PW: bpw")
	wantStatus(t, resp, body, 200)
	var ru ruBody
	json.Unmarshal(body, &ru)
	if len(ru.Ups) != 4 {
		t.Fatalf("?ru: %s", body)
	}
	for _, u := range ru.Ups {
		if u.IP != "127.0.0.3" || !strings.HasPrefix(u.Vp, "/files/") {
			t.Fatalf("?ru through nginx: %s", body)
		}
	}

	// The cookie hoard sets (clearing a stale one) is Secure behind TLS.
	resp, body = ngx.do("GET", base+"/files/", "", "Cookie: cppwd=stale")
	wantStatus(t, resp, body, 200)
	if sc := resp.Header.Get("Set-Cookie"); !strings.Contains(sc, "cppwd=") || !strings.Contains(sc, "Secure") {
		t.Fatalf("Set-Cookie behind TLS nginx: %q", sc)
	}

	// The same headers straight to hoard from an untrusted address.
	direct := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}}).DialContext}}
	req, _ := http.NewRequest("PUT", s.URL+"/d.txt", strings.NewReader("d"))
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	req.Header.Set("X-Forwarded-Proto", "https")
	r2, err := direct.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if loc := r2.Header.Get("Location"); r2.StatusCode != 201 || !strings.HasPrefix(loc, "http://") {
		t.Fatalf("untrusted X-Forwarded-Proto believed: %d %q", r2.StatusCode, loc)
	}
	req, _ = http.NewRequest("GET", s.URL+"/", nil)
	req.Header.Set("X-Forwarded-Proto", "https")
	req.Header.Set("Cookie", "cppwd=stale")
	r2, err = direct.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if sc := r2.Header.Get("Set-Cookie"); sc == "" || strings.Contains(sc, "Secure") {
		t.Fatalf("Set-Cookie to an untrusted peer claiming https: %q", sc)
	}
	resp, body = ngx.do("GET", base+"/files/?ru&j", "", "PW: bpw")
	wantStatus(t, resp, body, 200)
	json.Unmarshal(body, &ru)
	if last := ru.Ups[0]; last.IP != "127.0.0.3" || last.Vp != "/files/d.txt" {
		t.Fatalf("?ru for the untrusted upload: %s", fmt.Sprint(ru.Ups))
	}
}

// TestTLSSecureCookie: straight over hoard's own TLS the cookie is Secure.
func TestTLSSecureCookie(t *testing.T) {
	cdir := t.TempDir()
	cert := filepath.Join(cdir, "cert.pem")
	pool := tlsCert(t, cert, "", 1)
	s := start(t, "-a", "boss:bpw", "-v", t.TempDir()+"::r", "--cert", cert)
	resp, body := tlsDo(t, tlsClient(pool, false), "GET", httpsURL(s)+"/", nil, "Cookie: cppwd=stale")
	wantStatus(t, resp, body, 200)
	if sc := resp.Header.Get("Set-Cookie"); !strings.Contains(sc, "Secure") {
		t.Fatalf("Set-Cookie over TLS: %q", sc)
	}
}
