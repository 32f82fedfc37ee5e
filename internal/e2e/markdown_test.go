package e2e

import (
	"html"
	"regexp"
	"strings"
	"testing"
)

var tagRE = regexp.MustCompile(`(?is)<[a-z][^>]*>`)

// attrs splits a start tag into its attribute names and (unescaped)
// values, as a browser's tokenizer would for well-formed output.
func attrs(tag string) [][2]string {
	s := strings.TrimSuffix(strings.TrimPrefix(tag, "<"), ">")
	i := strings.IndexAny(s, " \t\n\r/")
	if i < 0 {
		return nil
	}
	s = s[i:]
	var out [][2]string
	for {
		s = strings.TrimLeft(s, " \t\n\r/")
		if s == "" {
			return out
		}
		j := strings.IndexAny(s, " \t\n\r/=")
		if j < 0 {
			return append(out, [2]string{strings.ToLower(s), ""})
		}
		name := strings.ToLower(s[:j])
		s = strings.TrimLeft(s[j:], " \t\n\r")
		if !strings.HasPrefix(s, "=") {
			out = append(out, [2]string{name, ""})
			continue
		}
		s = strings.TrimLeft(s[1:], " \t\n\r")
		var val string
		if s != "" && (s[0] == '"' || s[0] == '\'') {
			k := strings.IndexByte(s[1:], s[0])
			if k < 0 {
				k = len(s) - 1
			}
			val, s = s[1:1+k], s[min(len(s), k+2):]
		} else {
			k := strings.IndexAny(s, " \t\n\r")
			if k < 0 {
				k = len(s)
			}
			val, s = s[:k], s[k:]
		}
		out = append(out, [2]string{name, html.UnescapeString(val)})
	}
}

// checkSafeHTML fails the test when the page could run script.
func checkSafeHTML(t *testing.T, page string) {
	t.Helper()
	for _, p := range unsafeHTML(page) {
		t.Error(p)
	}
}

// unsafeHTML lists what in the page could run script: a script element,
// an event-handler attribute, or a script-capable URL in a tag.
func unsafeHTML(page string) []string {
	var probs []string
	for _, tag := range tagRE.FindAllString(page, -1) {
		low := strings.ToLower(tag)
		for _, bad := range []string{"<script", "<iframe", "<object", "<embed", "<svg", "<math", "<form", "<base", "<meta http-equiv", "<link"} {
			if strings.HasPrefix(low, bad) {
				probs = append(probs, "dangerous tag survived: "+tag)
			}
		}
		for _, a := range attrs(tag) {
			if strings.HasPrefix(a[0], "on") {
				probs = append(probs, "event handler survived: "+tag)
			}
			switch a[0] {
			case "href", "src", "action", "formaction", "xlink:href", "data", "poster", "srcdoc":
			default:
				continue
			}
			u := strings.Map(func(r rune) rune {
				if r <= ' ' {
					return -1
				}
				return r
			}, strings.ToLower(a[1]))
			for _, scheme := range []string{"javascript:", "vbscript:", "data:text", "data:application", "data:image/svg"} {
				if strings.HasPrefix(u, scheme) {
					probs = append(probs, "script URL survived: "+tag)
				}
			}
		}
	}
	return probs
}

// TestSafeHTMLChecker: the checker itself catches what it must and lets
// escaped text pass.
func TestSafeHTMLChecker(t *testing.T) {
	for _, bad := range []string{`<b onclick=x>`, `<a href=" JaVa&#115;cript:x">`, `<img src=x onerror="y">`, `<script>`, `<a title='t' ONMOUSEOVER='x'>`} {
		if len(unsafeHTML(bad)) == 0 {
			t.Errorf("checker missed %s", bad)
		}
	}
	if p := unsafeHTML(`<a href="https://x" title="a&quot; onclick=&quot;b">`); len(p) != 0 {
		t.Errorf("checker flagged escaped text: %v", p)
	}
}

func TestMarkdownRendersSafely(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-v", dir+"::r")
	src := strings.Join([]string{
		"# Title <script>alert(1)</script>",
		"",
		"Some *emphasis* and `code` and a [good link](https://example.com/x?a=1&b=2).",
		"",
		"<script>alert('raw')</script>",
		"",
		"<img src=x onerror=alert(1)>",
		"",
		`<div onclick="alert(1)">click</div>`,
		"",
		"<iframe src=\"https://evil.example\"></iframe>",
		"",
		"<svg onload=alert(1)></svg>",
		"",
		"[js](javascript:alert(1)) [JS](JaVaScRiPt:alert(1)) [ent](&#106;avascript:alert(1)) [tab](java\tscript:alert(1))",
		"",
		"[vb](vbscript:msgbox) [data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
		"",
		"![img](javascript:alert(1)) ![svg](data:image/svg+xml,<svg onload=alert(1)>)",
		"",
		"<javascript:alert(1)>",
		"",
		`[ref]: javascript:alert(1) "t"`,
		"",
		"[ref] inline <a href=\"javascript:alert(1)\">a</a> <b onmouseover=alert(1)>b</b>",
		"",
		`[t](https://a.example "x\" onmouseover=\"alert(1)") [q](https://a.example/"onmouseover="alert(1)) ![a" onerror="alert(1)](https://a.example/i.png)`,
		"",
		"[x]( javascript:alert(1) ) [y](<javascript:alert(1)>) [z](%6Aavascript:alert(1))",
		"",
		"```html",
		"<script>shown as code</script>",
		"```",
		"",
		"| a | b |",
		"|---|---|",
		"| <script>x</script> | ok |",
	}, "\n")
	writeFile(t, dir, "README.md", []byte(src))
	resp, body := s.do(t, "GET", "/README.md?v", nil)
	wantStatus(t, resp, body, 200)
	page := string(body)
	if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Fatalf("Content-Type %q", ct)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
		t.Fatalf("CSP %q", csp)
	}
	checkSafeHTML(t, page)
	for _, want := range []string{"<h1>Title", "<em>emphasis</em>", "<code>code</code>", `href="https://example.com/x?a=1&amp;b=2"`, "&lt;script&gt;shown as code&lt;/script&gt;", "<table>"} {
		if !strings.Contains(page, want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("page:\n%s", page)
	}
	// Without ?v the file is served as the text it is.
	resp, body = s.do(t, "GET", "/README.md", nil)
	wantStatus(t, resp, body, 200)
	if string(body) != src || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("plain GET: %q", resp.Header.Get("Content-Type"))
	}
}

func TestViewMediaPages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, "-v", dir+"::r")
	for _, tc := range []struct{ name, tag string }{
		{name: `song "1" <x>.mp3`, tag: "<audio controls"},
		{name: "clip.webm", tag: "<video controls"},
		{name: "pic.png", tag: "<img src="},
	} {
		writeFile(t, dir, tc.name, []byte("not really media"))
		resp, body := s.do(t, "GET", "/"+escapeURLPath(tc.name)+"?v", nil)
		wantStatus(t, resp, body, 200)
		page := string(body)
		if !strings.Contains(page, tc.tag) || resp.Header.Get("Content-Security-Policy") == "" {
			t.Fatalf("%s: page %s", tc.name, page)
		}
		checkSafeHTML(t, page)
		if strings.Contains(page, `"1"`) || strings.Contains(page, "<x>") {
			t.Fatalf("%s: name not escaped: %s", tc.name, page)
		}
	}
	// An SVG is not shown in an <img> page (it is active content); ?v of
	// anything else is the file itself.
	writeFile(t, dir, "a.bin", []byte{1, 2, 3})
	resp, body := s.do(t, "GET", "/a.bin?v", nil)
	wantStatus(t, resp, body, 200)
	if string(body) != "\x01\x02\x03" {
		t.Fatalf("?v of a.bin: %q", body)
	}
	// Permissions are those of the file.
	dir2 := t.TempDir()
	s2 := start(t, "-a", "u:pw", "-v", dir2+"::r,u")
	writeFile(t, dir2, "x.md", []byte("# x"))
	resp, body = s2.do(t, "GET", "/x.md?v", nil)
	wantStatus(t, resp, body, 401)
}

func escapeURLPath(name string) string {
	r := strings.NewReplacer("%", "%25", " ", "%20", `"`, "%22", "<", "%3C", ">", "%3E", "#", "%23", "?", "%3F")
	return r.Replace(name)
}
