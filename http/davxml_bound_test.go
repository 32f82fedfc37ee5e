package http

import (
	"strings"
	"testing"

	"hoard/store"
)

// amplifying is a body whose one value, written out as a self-contained
// fragment, re-declares a 5 KB namespace on each of its 9,000 elements
// and their namespaced attributes: 90 MB built from 140 KB (with an
// 800 KB namespace, as a body of 1 MiB allows, 14 GB).
func amplifying(root, inner string) string {
	ns := "urn:" + strings.Repeat("n", 5_000)
	var b strings.Builder
	for range 9000 {
		b.WriteString(`<a:x a:y="1"/>`)
	}
	return strings.ReplaceAll(strings.ReplaceAll(root, "{ns}", ns), "{inner}", strings.ReplaceAll(inner, "{els}", b.String()))
}

// TestDAVFragmentBounded: the fragments kept from a body (a LOCK's owner,
// a PROPPATCH value) are bounded whatever the body's namespaces: parsing
// a body of under 1 MiB never builds a value larger than what may be
// kept. A LOCK's owner is parsed before any permission is checked, so an
// unbounded one was an unauthenticated memory exhaustion.
func TestDAVFragmentBounded(t *testing.T) {
	lock := amplifying(`<D:lockinfo xmlns:D="DAV:" xmlns:a="{ns}"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>{inner}</D:owner></D:lockinfo>`, "{els}")
	if len(lock) > maxDAVBody {
		t.Fatalf("the body is %d bytes", len(lock))
	}
	lr, err := parseLockinfo([]byte(lock))
	if err == nil && len(lr.owner) > store.MaxLockOwner {
		t.Errorf("a LOCK body of %d bytes kept an owner of %d bytes", len(lock), len(lr.owner))
	}
	patch := amplifying(`<D:propertyupdate xmlns:D="DAV:" xmlns:a="{ns}"><D:set><D:prop>{inner}</D:prop></D:set></D:propertyupdate>`, "<a:v>{els}</a:v><a:w>small</a:w>")
	if len(patch) > maxDAVBody {
		t.Fatalf("the body is %d bytes", len(patch))
	}
	ops, err := parseProppatch([]byte(patch))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range ops {
		if len(o.frag) > store.MaxPropsBytes+1 {
			t.Errorf("a PROPPATCH body of %d bytes kept a value of %d bytes for %s", len(patch), len(o.frag), o.name.Local[:1])
		}
	}
	if len(ops) != 2 || ops[1].frag != "small" {
		t.Errorf("the small value beside it: %d ops", len(ops))
	}
}

// TestDAVNamesBounded: the property names a PROPFIND or PROPPATCH asks
// about are written back with their namespaces, for a PROPFIND once per
// member of the answer. A namespace declared once in a body of under
// 1 MiB and used by 9,000 names would be written 9,000 times per member
// (7 GB for each file listed): the names' total size is capped.
func TestDAVNamesBounded(t *testing.T) {
	ns := "urn:" + strings.Repeat("n", 100_000)
	names := strings.Repeat(`<a:x/>`, 9000)
	if _, err := parsePropfind([]byte(`<D:propfind xmlns:D="DAV:" xmlns:a="` + ns + `"><D:prop>` + names + `</D:prop></D:propfind>`)); err == nil {
		t.Error("a PROPFIND asking for 900 MB of names was accepted")
	}
	if _, err := parseProppatch([]byte(`<D:propertyupdate xmlns:D="DAV:" xmlns:a="` + ns + `"><D:remove><D:prop>` + names + `</D:prop></D:remove></D:propertyupdate>`)); err == nil {
		t.Error("a PROPPATCH naming 900 MB of names was accepted")
	}
	// What clients send passes.
	if _, err := parsePropfind([]byte(`<D:propfind xmlns:D="DAV:" xmlns:oc="http://owncloud.org/ns"><D:prop><D:getetag/><oc:checksums/><D:getlastmodified/></D:prop></D:propfind>`)); err != nil {
		t.Error(err)
	}
}
