package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// pathsOutsideVolume lists every path below base that is not below base/vol.
func pathsOutsideVolume(t *testing.T, base string) []string {
	t.Helper()
	var out []string
	for _, p := range tree(t, base) {
		if p != "vol" && !strings.HasPrefix(p, "vol/") {
			out = append(out, p)
		}
	}
	return out
}

// traversalSetup makes base/vol (the volume) next to base/canary (a file)
// and base/outside/ (a folder with a canary and a file whose name must
// never show up), plus symbolic links inside the volume that point out.
// The canary content is a fresh random token.
func traversalSetup(t *testing.T) (base, vol, token, secretName string) {
	t.Helper()
	base = t.TempDir()
	vol = filepath.Join(base, "vol")
	token = "CANARY-" + strings.ToUpper(strings.ReplaceAll(time.Now().Format("150405.000000000"), ".", ""))
	secretName = "listme-" + strings.ToLower(token) + ".txt"
	writeFile(t, base, "canary", []byte(token))
	writeFile(t, base, "outside/canary", []byte(token))
	writeFile(t, base, "outside/"+secretName, []byte(token))
	writeFile(t, vol, "ok.txt", []byte("inside"))
	writeFile(t, vol, "sub/in.txt", []byte("inside"))
	for link, to := range map[string]string{
		"out":       filepath.Join(base, "outside"), // folder, absolute
		"outrel":    "../outside",                   // folder, relative
		"outabs":    filepath.Join(base, "canary"),  // file, absolute
		"outfile":   "../canary",                    // file, relative
		"sub/up":    "../../outside",                // from a subfolder
		"etcpasswd": "/etc/passwd",
	} {
		if err := os.Symlink(to, filepath.Join(vol, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	return base, vol, token, secretName
}

func TestTraversalRead(t *testing.T) {
	t.Parallel()
	base, vol, token, secretName := traversalSetup(t)
	s := start(t, "-a", "adm:pw-adm", "-v", vol+"::A", "-v", vol+":v2:A,adm")
	targets := []string{
		"/../canary",
		"/../../canary",
		"/sub/../../canary",
		"/./../canary",
		"/%2e%2e/canary",
		"/%2E%2E/canary",
		"/.%2e/canary",
		"/%2e./canary",
		"/%2E%2E%2Fcanary",
		"/%2e%2e%2f%2e%2e%2fcanary",
		"/%252e%252e/canary",
		"/%252e%252e%252fcanary",
		"/..%2fcanary",
		"/..%2Fcanary",
		"/sub/..%2f..%2fcanary",
		"/..\\canary",
		"/sub\\..\\..\\canary",
		"/%5c..%5ccanary",
		"/..%5ccanary",
		"/%5C..%5C..%5Ccanary",
		"/v2/../canary",
		"/v2/%2e%2e/%2e%2e/canary",
		"//etc/passwd",
		"///../canary",
		"/..;/canary",
		"/canary%00",
		"/%00/../canary",
		"/ok.txt%00.png",
		"/..%00/canary",
		"/%0a../canary",
		"/ok.txt%0d%0aX-Evil:%201",
		"/%c0%ae%c0%ae/canary",
		"/%c0%ae%c0%ae%c0%afcanary",
		"/%e0%80%ae%e0%80%ae/canary",
		"/%c0%2e%c0%2e/canary",
		"/%uff0e%uff0e/canary",
		"/%u002e%u002e/canary",
		"/%ef%bc%8e%ef%bc%8e/canary",
		"/%2e%2e%c0%afcanary",
		"/out/canary",
		"/out/" + "%2e%2e/canary",
		"/outrel/canary",
		"/outabs",
		"/outfile",
		"/sub/up/canary",
		"/etcpasswd",
		"/out/",
		"/out/?ls",
		"/outrel/?ls",
		"/out/?tree=.",
		"/sub/up/?ls=t",
		"/out?ls",
		"/outabs?dl",
	}
	// Absolute-form request targets, some naming other hosts.
	host := strings.TrimPrefix(s.URL, "http://")
	for _, p := range []string{"/../canary", "/%2e%2e/canary", "/out/canary", "/..%2fcanary"} {
		targets = append(targets, "http://"+host+p, "http://evil.example"+p)
	}
	for _, target := range targets {
		for _, cred := range []string{"", "PW: pw-adm"} {
			name := target
			if cred != "" {
				name += " as admin"
			}
			t.Run(name, func(t *testing.T) {
				var hdr []string
				if cred != "" {
					hdr = append(hdr, cred)
				}
				resp, body := rawRequest(t, s, "GET", target, nil, hdr...)
				if resp.StatusCode < 400 || resp.StatusCode > 499 {
					t.Errorf("GET %s: status = %d, want 4xx; body %.200q", target, resp.StatusCode, body)
				}
				if strings.Contains(string(body), token) || strings.Contains(string(body), secretName) {
					t.Errorf("GET %s: body reveals what is outside the volume: %.300q", target, body)
				}
				if strings.Contains(string(body), "root:") {
					t.Errorf("GET %s: body looks like /etc/passwd", target)
				}
				if strings.Contains(string(body), base) {
					t.Errorf("GET %s: body names a server path: %.300q", target, body)
				}
				if resp.Header.Get("X-Evil") != "" {
					t.Errorf("GET %s: injected header present", target)
				}
			})
		}
	}

	t.Run("listings hide links that lead out", func(t *testing.T) {
		for _, path := range []string{"/?ls", "/?ls&dots", "/?ls=t", "/?ls=v", "/", "/?tree=.", "/?tree", "/sub/?ls", "/sub/?tree"} {
			resp, body := s.do(t, "GET", path, nil, "PW: pw-adm")
			wantStatus(t, resp, body, http.StatusOK)
			for _, n := range []string{"out", "outrel", "outabs", "outfile", "etcpasswd", "up", secretName, token} {
				if slices.Contains(listingWords(string(body)), n) {
					t.Errorf("GET %s shows %q: %.400s", path, n, body)
				}
			}
		}
		dirs, files := listingNames(t, getListing(t, s, "/?ls&dots", "PW: pw-adm"))
		if !reflect.DeepEqual(dirs, []string{"sub", "v2"}) || !reflect.DeepEqual(files, []string{"ok.txt"}) {
			t.Errorf("root listing: dirs %q files %q, want [sub v2] [ok.txt]", dirs, files)
		}
	})
}

// listingWords splits a listing body into the names it may contain.
func listingWords(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return strings.ContainsRune(" \t\r\n\"'<>/,:;[]{}=\x1b", r)
	})
}

func TestTraversalWrite(t *testing.T) {
	t.Parallel()
	base, vol, token, _ := traversalSetup(t)
	s := start(t, "-v", vol+"::A")
	before := pathsOutsideVolume(t, base)
	type tcase struct {
		method, target string
		hdr            []string
		any            bool // the request names a legal path inside the volume; only "nothing outside" is checked
	}
	var cases []tcase
	for _, p := range []string{
		"/../pwned",
		"/../canary?replace",
		"/%2e%2e/pwned",
		"/%2E%2E%2Fpwned",
		"/..%2fpwned",
		"/..%2Fcanary?replace",
		"/..\\pwned",
		"/%5c..%5cpwned",
		"/sub/..%2f..%2fpwned",
		"/%00pwned",
		"/pwned%00.txt",
		"/%0apwned",
		"/%c0%ae%c0%ae/pwned",
		"/%e0%80%ae%e0%80%ae/pwned",
		"/out/pwned",
		"/out/canary?replace",
		"/out/canary?apnd",
		"/outrel/pwned",
		"/outrel/new/dir/pwned",
		"/sub/up/pwned",
		"/outabs?apnd",
		"/outfile?apnd",
		"/out/",
	} {
		cases = append(cases, tcase{method: "PUT", target: p})
	}
	for _, p := range []string{"/%252e%252e/pwned", "/outabs?replace", "/outfile?replace", "/outabs", "/..../pwned"} {
		cases = append(cases, tcase{method: "PUT", target: p, any: true})
	}
	host := strings.TrimPrefix(s.URL, "http://")
	cases = append(cases, tcase{method: "PUT", target: "http://" + host + "/../pwned"})
	for _, p := range []string{"/out/", "/outrel/", "/sub/up/", "/../", "/%2e%2e/", "/..%2f"} {
		cases = append(cases, tcase{method: "POST", target: p})
	}
	for _, fn := range []string{"../pwned", "../../pwned", "..\\pwned", "/etc/pwned", "..", "sub/../../pwned"} {
		cases = append(cases, tcase{method: "POST", target: "/", hdr: []string{"fn=" + fn}, any: true})
	}
	for _, tc := range cases {
		name := tc.method + " " + tc.target + " " + strings.Join(tc.hdr, " ")
		t.Run(name, func(t *testing.T) {
			var body []byte
			hdr := []string{}
			if tc.method == "POST" {
				fn := "pwned"
				if len(tc.hdr) > 0 {
					fn = strings.TrimPrefix(tc.hdr[0], "fn=")
				}
				var ct string
				body, ct = multipartFiles(t, [2]string{fn, "PWNED-" + token})
				hdr = append(hdr, ct)
			} else {
				body = []byte("PWNED-" + token)
			}
			resp, rb := rawRequest(t, s, tc.method, tc.target, body, hdr...)
			if !tc.any && (resp.StatusCode < 400 || resp.StatusCode > 499) {
				t.Errorf("%s %s: status = %d, want 4xx; body %.200q", tc.method, tc.target, resp.StatusCode, rb)
			}
			if tc.any && resp.StatusCode >= 500 {
				t.Errorf("%s %s: status = %d, want no server error; body %.200q", tc.method, tc.target, resp.StatusCode, rb)
			}
			if after := pathsOutsideVolume(t, base); !reflect.DeepEqual(after, before) {
				t.Fatalf("%s %s changed the folder outside the volume: %q, want %q", tc.method, tc.target, after, before)
			}
			for _, p := range []string{"canary", "outside/canary"} {
				if !fileHolds(base, p, token) {
					t.Fatalf("%s %s changed %s outside the volume", tc.method, tc.target, p)
				}
			}
		})
	}
	t.Run("nothing outside holds the upload", func(t *testing.T) {
		filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasPrefix(p, vol+string(filepath.Separator)) {
				return nil
			}
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "PWNED") {
				t.Errorf("%s outside the volume holds uploaded data", p)
			}
			return nil
		})
	})
}

// TestTraversalHist: the volume's state folder is never served, listed or
// written, whatever the permissions and however the name is spelled.
func TestTraversalHist(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	vol := filepath.Join(base, "vol")
	inner := filepath.Join(vol, "deep", "inner")
	writeFile(t, vol, "ok.txt", []byte("ok"))
	writeFile(t, inner, "i.txt", []byte("i"))
	// The inner folder is a volume of its own, mounted elsewhere: its
	// state folder lies inside the outer volume's tree.
	s := start(t, "-a", "adm:pw-adm", "-v", vol+"::A", "-v", inner+":other:A", "-v", vol+":dots:r.,adm")
	secretOf := func(dir string) string {
		b, err := os.ReadFile(filepath.Join(dir, ".hist", "secret"))
		if err != nil {
			t.Fatalf("the server made no %s/.hist/secret: %v", dir, err)
		}
		return string(b)
	}
	secrets := []string{secretOf(vol), secretOf(inner)}
	histBefore := map[string][]string{vol: tree(t, filepath.Join(vol, ".hist")), inner: tree(t, filepath.Join(inner, ".hist"))}

	gets := []string{
		"/.hist", "/.hist/", "/.hist/secret", "/.HIST/secret", "/.Hist/secret", "/.hisT/",
		"/%2ehist/secret", "/%2Ehist/secret", "/%2e%68%69%73%74/secret", "/.hist%2fsecret",
		"/./.hist/secret", "//.hist/secret", "/sub/../.hist/secret", "/.hist/./secret",
		"/.hist/secret?dl", "/.hist/secret?mime=text/plain", "/.hist?ls", "/.hist/?ls", "/.hist/?ls&dots",
		"/.hist/?ls=t", "/.hist/?ls=v", "/.hist/?tree=.", "/.hist/?tree", "/.hist?tree=.&dots",
		"/dots/.hist/secret", "/dots/.hist/?ls&dots",
		"/other/.hist/secret", "/other/.hist/?ls&dots",
		"/deep/inner/.hist/secret", "/deep/inner/.hist/?ls&dots", "/deep/inner/.HIST/secret",
	}
	for _, p := range gets {
		for _, cred := range []string{"", "PW: pw-adm"} {
			t.Run("GET "+p+" "+cred, func(t *testing.T) {
				var hdr []string
				if cred != "" {
					hdr = append(hdr, cred)
				}
				resp, body := rawRequest(t, s, "GET", p, nil, append(hdr, "Range: bytes=0-")...)
				if resp.StatusCode < 400 || resp.StatusCode > 499 {
					t.Errorf("GET %s: status = %d, want 4xx; body %.200q", p, resp.StatusCode, body)
				}
				for _, sec := range secrets {
					if strings.Contains(string(body), sec) || strings.Contains(string(body), sec[:16]) {
						t.Errorf("GET %s: body reveals a volume secret", p)
					}
				}
				if strings.Contains(string(body), "  secret\n") || strings.Contains(string(body), `"secret"`) || strings.Contains(string(body), "m secret") {
					t.Errorf("GET %s: body lists the state folder: %.300q", p, body)
				}
			})
		}
	}

	t.Run("listings never show .hist", func(t *testing.T) {
		for _, p := range []string{"/?ls", "/?ls&dots", "/?ls=t&dots", "/?ls=v&dots", "/?dots", "/?tree=.&dots", "/?tree&dots",
			"/dots/?ls&dots", "/other/?ls&dots", "/deep/inner/?ls&dots", "/deep/inner/?tree=.&dots", "/deep/?tree=.&dots"} {
			resp, body := s.do(t, "GET", p, nil, "PW: pw-adm")
			wantStatus(t, resp, body, http.StatusOK)
			if strings.Contains(strings.ToLower(string(body)), ".hist") {
				t.Errorf("GET %s shows .hist: %.400s", p, body)
			}
		}
	})

	var writes []struct{ method, target string }
	for _, p := range []string{
		"/.hist", "/.hist?replace", "/.HIST", "/.hist/secret?replace", "/.hist/new.txt", "/.HIST/x",
		"/%2ehist/x", "/.Hist/sub/x", "/.hist/secret?apnd", "/.hist/", "/other/.hist/secret?replace",
		"/other/.hist/x", "/deep/inner/.hist/secret?replace", "/deep/inner/.hist/x", "/deep/inner/.HIST/x",
	} {
		writes = append(writes, struct{ method, target string }{"PUT", p})
	}
	for _, p := range []string{"/.hist/", "/.HIST/", "/%2ehist/", "/other/.hist/", "/deep/inner/.hist/"} {
		writes = append(writes, struct{ method, target string }{"POST", p})
	}
	for _, w := range writes {
		for _, cred := range []string{"", "PW: pw-adm"} {
			t.Run(w.method+" "+w.target+" "+cred, func(t *testing.T) {
				hdr := []string{}
				if cred != "" {
					hdr = append(hdr, cred)
				}
				body := []byte("PWNED")
				if w.method == "POST" {
					var ct string
					body, ct = multipartFiles(t, [2]string{"secret", "PWNED"})
					hdr = append(hdr, ct)
				}
				resp, rb := rawRequest(t, s, w.method, w.target, body, hdr...)
				if resp.StatusCode < 400 || resp.StatusCode > 499 {
					t.Errorf("%s %s: status = %d, want 4xx; body %.200q", w.method, w.target, resp.StatusCode, rb)
				}
				for dir, want := range histBefore {
					if got := tree(t, filepath.Join(dir, ".hist")); !reflect.DeepEqual(got, want) {
						t.Fatalf("%s %s changed %s/.hist: %q, want %q", w.method, w.target, dir, got, want)
					}
				}
				if got := []string{secretOf(vol), secretOf(inner)}; !reflect.DeepEqual(got, secrets) {
					t.Fatalf("%s %s changed a volume secret", w.method, w.target)
				}
			})
		}
	}
}
