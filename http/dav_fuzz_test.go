package http

import (
	"net/url"
	"strings"
	"testing"

	"hoard/store"
)

// Fuzz targets for what WebDAV parses: XML bodies, the If header and
// Destination. Their seeds run with every go test.

func FuzzDAVXML(f *testing.F) {
	for _, s := range []string{
		``,
		`<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>`,
		`<D:propfind xmlns:D="DAV:"><D:prop><D:getetag/><x:y xmlns:x="urn:x"/></D:prop></D:propfind>`,
		`<D:propfind xmlns:D="DAV:"><D:prop><x:a xmlns:x=""/></D:prop></D:propfind>`,
		`<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><D:getlastmodified>Wed, 02 Jan 2019 03:04:05 GMT</D:getlastmodified></D:prop></D:set><D:remove><D:prop><z:q xmlns:z="urn:z"/></D:prop></D:remove></D:propertyupdate>`,
		`<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:shared/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner><D:href>http://me</D:href></D:owner></D:lockinfo>`,
		`<D:lockinfo xmlns:D="DAV:"><D:lockscope>`,
		strings.Repeat("<a>", 40) + strings.Repeat("</a>", 40),
		`<a/><b/>`,
		`<p:a/>`,
		`<D:propertyupdate xmlns:D="DAV:" xmlns:Q="urn:q"><D:set><D:prop><Q:a>t &amp; <Q:b Q:x="1" y="2" xml:lang="en">u</Q:b><![CDATA[<c>]]><!-- c --></Q:a><n xmlns="">v</n></D:prop></D:set></D:propertyupdate>`,
		`<a:lockinfo xmlns:a="DAV:"><a:lockscope><a:exclusive/></a:lockscope><a:locktype><a:write/></a:locktype><a:owner><a:href>http://me</a:href></a:owner></a:lockinfo>`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if root, err := parseXML(body); err == nil {
			var depth func(n *xnode, d int)
			count := 0
			depth = func(n *xnode, d int) {
				count++
				if d > maxDAVDepth {
					t.Fatalf("an element %d levels deep was accepted", d)
				}
				if n.inner != nil && len(n.inner) > len(body) {
					t.Fatal("inner bytes longer than the body")
				}
				for _, k := range n.kids {
					depth(k, d+1)
				}
			}
			depth(root, 1)
			if count > maxDAVNodes {
				t.Fatalf("%d elements accepted", count)
			}
		}
		if pf, err := parsePropfind(body); err == nil {
			switch pf.mode {
			case "allprop", "propname":
				if len(pf.props) != 0 {
					t.Fatal("props listed with allprop/propname")
				}
			case "prop":
			default:
				t.Fatalf("mode %q", pf.mode)
			}
		}
		if ops, err := parseProppatch(body); err == nil {
			if len(ops) == 0 {
				t.Fatal("a proppatch with no property was accepted")
			}
			for _, o := range ops {
				if len(o.frag) > store.MaxPropsBytes {
					continue // cut: too long to be kept (the store refuses it)
				}
				checkFragment(t, o.frag)
			}
		}
		if lr, err := parseLockinfo(body); err == nil {
			if len(lr.owner) > store.MaxLockOwner {
				t.Fatalf("an owner of %d bytes was kept", len(lr.owner))
			}
			checkFragment(t, lr.owner)
		}
	})
}

// checkFragment: a value kept as a fragment is self-contained XML, and
// parsing it again inside any other prefixes gives it back unchanged.
func checkFragment(t *testing.T, frag string) {
	t.Helper()
	if !store.ValidFragment(frag) {
		t.Fatalf("fragment %q is not self-contained XML", frag)
	}
	ops, err := parseProppatch([]byte(`<A:propertyupdate xmlns:A="DAV:" xmlns:D="urn:other"><A:set><A:prop><D:p>` + frag + `</D:p></A:prop></A:set></A:propertyupdate>`))
	if err != nil {
		t.Fatalf("fragment %q does not parse again: %v", frag, err)
	}
	if len(ops) != 1 || ops[0].frag != frag {
		t.Fatalf("fragment %q parses again as %+v", frag, ops)
	}
}

func FuzzIfHeader(f *testing.F) {
	for _, s := range []string{
		`(<opaquelocktoken:a-b-c>)`,
		`(<opaquelocktoken:a> ["etag"]) (Not <DAV:no-lock> ["etag"])`,
		`<http://h/x> (<opaquelocktoken:a>) <http://h/y> (Not ["e"])`,
		`(<tok`, `()`, `<x>`, `(Not)`, `([W/"x"])`, `(<a>) <b> (<c>)`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		lists, err := parseIf(h)
		if err != nil {
			return
		}
		if len(lists) == 0 || len(lists) > maxIfLists {
			t.Fatalf("%d lists", len(lists))
		}
		// Re-serialized, it parses to the same.
		var b strings.Builder
		for _, l := range lists {
			if len(l.conds) == 0 || len(l.conds) > maxIfConds {
				t.Fatalf("%d conditions", len(l.conds))
			}
			if l.tag != "" {
				b.WriteString("<" + l.tag + "> ")
			}
			b.WriteString("(")
			for _, c := range l.conds {
				if (c.token == "") == (c.etag == "") {
					t.Fatalf("a condition with token %q and etag %q", c.token, c.etag)
				}
				if c.not {
					b.WriteString("Not ")
				}
				if c.token != "" {
					b.WriteString("<" + c.token + "> ")
				} else {
					b.WriteString("[" + c.etag + "] ")
				}
			}
			b.WriteString(") ")
		}
		again, err := parseIf(b.String())
		if err != nil {
			t.Fatalf("%q re-serialized as %q: %v", h, b.String(), err)
		}
		if len(again) != len(lists) {
			t.Fatalf("%q: %d lists, then %d", h, len(lists), len(again))
		}
		for _, tok := range ifTokens(lists) {
			if tok == "" || strings.ContainsAny(tok, "<>") {
				t.Fatalf("token %q", tok)
			}
		}
	})
}

func FuzzDestination(f *testing.F) {
	for _, s := range []string{
		"/a/b.txt", "http://h:1/a%20b/c", "http://evil/x", "/a/../b", "/a/%2e%2e/b", "/a%2fb", "/a%5cb",
		"/%00", "//h/x", "ftp://h:1/x", "/a/./b/", "http://u@h:1/x", "/a?x=1#f", "mailto:x", "",
	} {
		f.Add(s, "/p")
	}
	f.Fuzz(func(t *testing.T, dest, loc string) {
		if loc != "" && (!strings.HasPrefix(loc, "/") || strings.HasSuffix(loc, "/")) {
			loc = ""
		}
		parts, err := parseDestination(dest, "h:1", loc)
		if err != nil {
			return
		}
		low := strings.ToLower(dest)
		if strings.Contains(low, "%2f") || strings.Contains(low, "%5c") || strings.Contains(low, "%00") {
			t.Fatalf("%q: an escaped separator or NUL passed", dest)
		}
		if u, err := url.Parse(dest); err != nil || (u.Host != "" && u.Host != "h:1") {
			t.Fatalf("%q: another host passed", dest)
		}
		for _, p := range parts {
			if p == "" || p == "." || p == ".." || strings.ContainsAny(p, "/\\\x00") {
				t.Fatalf("%q: component %q", dest, p)
			}
		}
	})
}
