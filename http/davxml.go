package http

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"hoard/store"
)

// The parsers of WebDAV requests: XML bodies (PROPFIND, PROPPATCH, LOCK),
// the If header, Depth, Timeout and Destination. Each is bounded: a body
// of more than maxDAVBody bytes, more than maxDAVDepth levels of elements
// or more than maxDAVNodes elements is refused before anything is done.

const (
	maxDAVBody  = 1 << 20
	maxDAVDepth = 32
	maxDAVNodes = 10000
	maxIfLists  = 64
	maxIfConds  = 64
	// maxDAVNames caps the bytes of the property names (namespace and
	// local name) a PROPFIND or PROPPATCH names: each is written back
	// with its namespace, a PROPFIND's once per member, so a namespace
	// declared once and used on every name would multiply the body.
	maxDAVNames = 64 << 10
)

const nsDAV = "DAV:"

// xnode is one element of a parsed body.
type xnode struct {
	name     xml.Name
	kids     []*xnode
	text     string // character data directly inside (trimmed)
	inner    []byte // the raw bytes between its start and end tags
	innerErr bool
	// toks[t0] is its start tag and toks[t1] its end tag, in its
	// document's tokens (namespaces resolved).
	doc    *[]xml.Token
	t0, t1 int
}

// content is the element's content as a self-contained XML fragment:
// every element declares its namespace itself, so the fragment means the
// same wherever it is later written (a dead property's value). Written
// out so, a body's namespace declared once is repeated on every element
// (a body of 1 MiB could make gigabytes), so it is built to at most limit
// bytes: ok is false when it is longer, and then what is returned is its
// first limit+1 bytes (too long to be kept, and not a whole fragment).
func (n *xnode) content(limit int) (frag string, ok bool) {
	if n.doc == nil || n.t1 <= n.t0 {
		return "", true
	}
	return fragment((*n.doc)[n.t0+1:n.t1], limit)
}

// xmlNS is the namespace of the reserved prefix xml (xml:lang).
const xmlNS = "http://www.w3.org/XML/1998/namespace"

// fragment writes tokens (balanced, namespaces resolved by the decoder)
// as XML: each element as <local xmlns="space">, each namespaced
// attribute with a prefix declared on its element; namespace
// declarations, comments and processing instructions are dropped. It
// stops once it has more than limit bytes (ok false; see content).
func fragment(toks []xml.Token, limit int) (string, bool) {
	var b strings.Builder
	var stack []string
	esc := func(s string) { xml.EscapeText(&b, []byte(s)) }
	for _, t := range toks {
		if b.Len() > limit {
			return b.String()[:limit+1], false
		}
		switch t := t.(type) {
		case xml.StartElement:
			b.WriteString("<" + t.Name.Local + ` xmlns="`)
			esc(t.Name.Space)
			b.WriteString(`"`)
			n := 0
			for _, a := range t.Attr {
				switch {
				case a.Name.Space == "xmlns" || a.Name.Space == "" && a.Name.Local == "xmlns":
					continue
				case a.Name.Space == "":
					b.WriteString(" " + a.Name.Local + `="`)
				case a.Name.Space == xmlNS || a.Name.Space == "xml":
					b.WriteString(" xml:" + a.Name.Local + `="`)
				default:
					p := "a" + strconv.Itoa(n)
					n++
					b.WriteString(" xmlns:" + p + `="`)
					esc(a.Name.Space)
					b.WriteString(`" ` + p + ":" + a.Name.Local + `="`)
				}
				esc(a.Value)
				b.WriteString(`"`)
			}
			b.WriteString(">")
			stack = append(stack, t.Name.Local)
		case xml.EndElement:
			if len(stack) > 0 {
				b.WriteString("</" + stack[len(stack)-1] + ">")
				stack = stack[:len(stack)-1]
			}
		case xml.CharData:
			esc(string(t))
		}
	}
	if b.Len() > limit {
		return b.String()[:limit+1], false
	}
	return b.String(), true
}

func (n *xnode) is(space, local string) bool {
	return n != nil && n.name.Space == space && n.name.Local == local
}

func (n *xnode) child(space, local string) *xnode {
	if n == nil {
		return nil
	}
	for _, k := range n.kids {
		if k.is(space, local) {
			return k
		}
	}
	return nil
}

func badXML(format string, args ...any) error {
	return errorf(http.StatusBadRequest, "bad XML body: "+format, args...)
}

// readDAVBody reads a request body of at most maxDAVBody bytes; nil for
// none.
func readDAVBody(q *req) ([]byte, error) {
	return q.readWhole(maxDAVBody, "the XML body")
}

// parseXML parses a whole body into its root element, checking that it is
// well-formed XML with namespaces that are declared properly.
func parseXML(body []byte) (*xnode, error) {
	d := xml.NewDecoder(bytes.NewReader(body))
	d.Strict = true
	var root *xnode
	var stack []*xnode
	var starts []int64
	nodes := 0
	doc := new([]xml.Token)
	for {
		before := d.InputOffset()
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, badXML("%v", err)
		}
		if len(stack) > 0 || isStart(tok) {
			*doc = append(*doc, xml.CopyToken(tok))
		}
		switch t := tok.(type) {
		case xml.StartElement:
			nodes++
			if nodes > maxDAVNodes {
				return nil, badXML("more than %d elements", maxDAVNodes)
			}
			if len(stack) >= maxDAVDepth {
				return nil, badXML("nested deeper than %d levels", maxDAVDepth)
			}
			for _, a := range t.Attr {
				if a.Name.Space == "xmlns" && a.Value == "" {
					return nil, badXML("the namespace prefix %q is bound to an empty name", a.Name.Local)
				}
			}
			if t.Name.Space == "" && strings.Contains(t.Name.Local, ":") {
				return nil, badXML("undeclared namespace prefix in <%s>", t.Name.Local)
			}
			n := &xnode{name: t.Name, doc: doc, t0: len(*doc) - 1}
			if len(stack) == 0 {
				if root != nil {
					return nil, badXML("more than one root element")
				}
				root = n
			} else {
				p := stack[len(stack)-1]
				p.kids = append(p.kids, n)
			}
			stack = append(stack, n)
			starts = append(starts, d.InputOffset())
		case xml.EndElement:
			n := stack[len(stack)-1]
			n.t1 = len(*doc) - 1
			s := starts[len(starts)-1]
			if s <= before && before <= int64(len(body)) {
				n.inner = body[s:before]
			} else {
				n.innerErr = true
			}
			stack, starts = stack[:len(stack)-1], starts[:len(starts)-1]
		case xml.CharData:
			if len(stack) > 0 {
				n := stack[len(stack)-1]
				if len(n.text) < 4096 {
					n.text += strings.TrimSpace(string(t))
				}
			} else if len(bytes.TrimSpace(t)) > 0 {
				return nil, badXML("text outside the root element")
			}
		}
	}
	if root == nil {
		return nil, badXML("no root element")
	}
	return root, nil
}

func isStart(t xml.Token) bool {
	_, ok := t.(xml.StartElement)
	return ok
}

// propfindReq is a parsed PROPFIND body.
type propfindReq struct {
	mode  string // "allprop", "propname" or "prop"
	props []xml.Name
	dead  bool // it asks for dead properties (or for all)
}

// parsePropfind reads a PROPFIND body; an empty one asks for allprop.
func parsePropfind(body []byte) (propfindReq, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return propfindReq{mode: "allprop", dead: true}, nil
	}
	root, err := parseXML(body)
	if err != nil {
		return propfindReq{}, err
	}
	if !root.is(nsDAV, "propfind") {
		return propfindReq{}, badXML("want a DAV:propfind element, got %s", root.name.Local)
	}
	var r propfindReq
	for _, k := range root.kids {
		switch {
		case k.is(nsDAV, "allprop"), k.is(nsDAV, "propname"):
			if r.mode != "" {
				return propfindReq{}, badXML("propfind asks for more than one of allprop, propname and prop")
			}
			r.mode = k.name.Local
		case k.is(nsDAV, "prop"):
			if r.mode != "" {
				return propfindReq{}, badXML("propfind asks for more than one of allprop, propname and prop")
			}
			r.mode = "prop"
			for _, p := range k.kids {
				r.props = append(r.props, p.name)
			}
			if err := namesFit(r.props); err != nil {
				return propfindReq{}, err
			}
		}
	}
	if r.mode == "" {
		return propfindReq{}, badXML("propfind names neither allprop, propname nor prop")
	}
	r.dead = r.mode != "prop"
	for _, n := range r.props {
		if n.Space != nsDAV || !slices.Contains(liveProps, n.Local) {
			r.dead = true
		}
	}
	return r, nil
}

// patchOp is one property of a PROPPATCH, in document order.
type patchOp struct {
	remove bool
	name   xml.Name
	value  string // the element's text
	frag   string // its content as a self-contained fragment (xnode.content)
}

func parseProppatch(body []byte) ([]patchOp, error) {
	root, err := parseXML(body)
	if err != nil {
		return nil, err
	}
	if !root.is(nsDAV, "propertyupdate") {
		return nil, badXML("want a DAV:propertyupdate element, got %s", root.name.Local)
	}
	var ops []patchOp
	for _, k := range root.kids {
		rm := k.is(nsDAV, "remove")
		if !rm && !k.is(nsDAV, "set") {
			continue
		}
		for _, p := range k.kids {
			if !p.is(nsDAV, "prop") {
				continue
			}
			for _, v := range p.kids {
				// A value too long to be kept is cut just past the
				// store's limit, which refuses it (507).
				frag, _ := v.content(store.MaxPropsBytes)
				ops = append(ops, patchOp{remove: rm, name: v.name, value: v.text, frag: frag})
			}
		}
	}
	if len(ops) == 0 {
		return nil, badXML("propertyupdate names no property")
	}
	names := make([]xml.Name, len(ops))
	for i, o := range ops {
		names[i] = o.name
	}
	if err := namesFit(names); err != nil {
		return nil, err
	}
	return ops, nil
}

// namesFit refuses property names of more than maxDAVNames bytes in all.
func namesFit(names []xml.Name) error {
	n := 0
	for _, x := range names {
		n += len(x.Space) + len(x.Local)
		if n > maxDAVNames {
			return badXML("the properties named take more than %d bytes", maxDAVNames)
		}
	}
	return nil
}

// lockReq is a parsed LOCK body; a refresh has none.
type lockReq struct {
	shared bool
	owner  string // DAV:owner's content, a self-contained XML fragment
}

func parseLockinfo(body []byte) (lockReq, error) {
	root, err := parseXML(body)
	if err != nil {
		return lockReq{}, err
	}
	if !root.is(nsDAV, "lockinfo") {
		return lockReq{}, badXML("want a DAV:lockinfo element, got %s", root.name.Local)
	}
	var r lockReq
	scope, typ := root.child(nsDAV, "lockscope"), root.child(nsDAV, "locktype")
	if scope == nil || typ == nil || typ.child(nsDAV, "write") == nil {
		return lockReq{}, badXML("lockinfo needs lockscope and a write locktype")
	}
	switch {
	case scope.child(nsDAV, "shared") != nil:
		r.shared = true
	case scope.child(nsDAV, "exclusive") != nil:
	default:
		return lockReq{}, badXML("lockscope is neither exclusive nor shared")
	}
	if o := root.child(nsDAV, "owner"); o != nil {
		// Self-contained: a prefix the client declared on its root means
		// the same in every lockdiscovery it is written into.
		owner, ok := o.content(store.MaxLockOwner)
		if !ok {
			return lockReq{}, errorf(http.StatusRequestEntityTooLarge, "the lock's owner is longer than %d bytes", store.MaxLockOwner)
		}
		r.owner = strings.TrimSpace(owner)
	}
	return r, nil
}

// ifCond is one condition of an If header list.
type ifCond struct {
	not   bool
	token string // a state token (Coded-URL content), or ""
	etag  string // an entity tag with its quotes, or ""
}

// ifList is one list of an If header, with its resource tag ("" for the
// request's resource).
type ifList struct {
	tag   string
	conds []ifCond
}

// parseIf parses an If header (RFC 4918 section 10.4).
func parseIf(h string) ([]ifList, error) {
	bad := func(why string) ([]ifList, error) {
		return nil, errorf(http.StatusBadRequest, "bad If header: %s", why)
	}
	var out []ifList
	tag := ""
	tagged := -1 // unknown until the first item
	s := h
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			break
		}
		switch s[0] {
		case '<':
			if tagged == 0 {
				return bad("a resource tag after an untagged list")
			}
			tagged = 1
			end := strings.IndexByte(s, '>')
			if end < 0 {
				return bad("unterminated resource tag")
			}
			tag = s[1:end]
			if tag == "" || strings.ContainsAny(tag, "<>()[] \t") {
				return bad("bad resource tag")
			}
			s = s[end+1:]
			s = strings.TrimLeft(s, " \t")
			if s == "" || s[0] != '(' {
				return bad("a resource tag without a list")
			}
		case '(':
			if tagged == -1 {
				tagged = 0
			}
			end := strings.IndexByte(s, ')')
			if end < 0 {
				return bad("unterminated list")
			}
			conds, err := parseIfConds(s[1:end])
			if err != nil {
				return nil, err
			}
			if len(out) >= maxIfLists {
				return bad("too many lists")
			}
			out = append(out, ifList{tag: tag, conds: conds})
			s = s[end+1:]
		default:
			return bad("expected a resource tag or a list")
		}
	}
	if len(out) == 0 {
		return bad("no list")
	}
	return out, nil
}

func parseIfConds(s string) ([]ifCond, error) {
	bad := func(why string) ([]ifCond, error) {
		return nil, errorf(http.StatusBadRequest, "bad If header: %s", why)
	}
	var out []ifCond
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			break
		}
		var c ifCond
		if len(s) >= 3 && strings.EqualFold(s[:3], "not") {
			c.not = true
			s = strings.TrimLeft(s[3:], " \t")
		}
		if s == "" {
			return bad("Not without a condition")
		}
		switch s[0] {
		case '<':
			end := strings.IndexByte(s, '>')
			if end < 0 {
				return bad("unterminated state token")
			}
			c.token = s[1:end]
			if c.token == "" || strings.ContainsAny(c.token, "<>()[] \t") {
				return bad("bad state token")
			}
			s = s[end+1:]
		case '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return bad("unterminated entity tag")
			}
			c.etag = s[1:end]
			if c.etag == "" || strings.ContainsAny(c.etag, "[]()<>") {
				return bad("bad entity tag")
			}
			s = s[end+1:]
		default:
			return bad("expected a state token or an entity tag")
		}
		if len(out) >= maxIfConds {
			return bad("too many conditions")
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return bad("empty list")
	}
	return out, nil
}

// ifTokens lists the state tokens an If header submits.
func ifTokens(lists []ifList) []string {
	var out []string
	for _, l := range lists {
		for _, c := range l.conds {
			if c.token != "" && !c.not {
				out = append(out, c.token)
			}
		}
	}
	return out
}

// parseDepth reads the Depth header: 0, 1 or -1 for infinity; def when
// absent.
func parseDepth(h string, def int) (int, error) {
	switch strings.ToLower(strings.TrimSpace(h)) {
	case "":
		return def, nil
	case "0":
		return 0, nil
	case "1":
		return 1, nil
	case "infinity":
		return -1, nil
	}
	return 0, errorf(http.StatusBadRequest, "Depth: %q: want 0, 1 or infinity", h)
}

// parseTimeout reads a LOCK's Timeout header ("Second-N, Infinite"): the
// first value understood; 0 for none (the store's maximum).
func parseTimeout(h string) time.Duration {
	for v := range strings.SplitSeq(h, ",") {
		v = strings.TrimSpace(v)
		if strings.EqualFold(v, "Infinite") {
			return 0
		}
		if len(v) > 7 && strings.EqualFold(v[:7], "Second-") {
			var n int64
			ok := true
			for _, c := range v[7:] {
				if c < '0' || c > '9' || n > 1<<31 {
					ok = false
					break
				}
				n = n*10 + int64(c-'0')
			}
			if ok && n > 0 {
				return time.Duration(n) * time.Second
			}
		}
	}
	return 0
}

// parseDestination reads a Destination header (an absolute URL or an
// absolute path) into the components of a path on this server. Refused:
// another host or scheme (502, RFC 4918 section 9.9.4), escaped slashes,
// backslashes or NUL (%2f, %5c, %00: no name holds them, so they are an
// attempt to slip a separator past a check), ".." (escaped or not), and
// what parsePath refuses.
func parseDestination(dest, host, loc string) ([]string, error) {
	if dest == "" {
		return nil, errorf(http.StatusBadRequest, "need a Destination header")
	}
	u, err := url.Parse(dest)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "Destination is not a URL")
	}
	if u.Scheme != "" || u.Host != "" {
		if (u.Scheme != "http" && u.Scheme != "https") || !strings.EqualFold(u.Host, host) {
			return nil, errorf(http.StatusBadGateway, "Destination %q is on another server", dest)
		}
	}
	if u.Opaque != "" || u.User != nil {
		return nil, errorf(http.StatusBadRequest, "Destination is not a path on this server")
	}
	raw := strings.ToLower(u.EscapedPath())
	for _, e := range []string{"%2f", "%5c", "%00"} {
		if strings.Contains(raw, e) {
			return nil, errorf(http.StatusBadRequest, "Destination contains an escaped %q", e)
		}
	}
	p := u.Path
	if !strings.HasPrefix(p, "/") {
		return nil, errorf(http.StatusBadRequest, "Destination is not an absolute path")
	}
	for c := range strings.SplitSeq(p, "/") {
		if c == ".." {
			return nil, errorf(http.StatusBadRequest, "Destination contains \"..\"")
		}
	}
	if loc != "" {
		if p != loc && !strings.HasPrefix(p, loc+"/") {
			return nil, errorf(http.StatusBadGateway, "Destination %q is outside this server's prefix %s", dest, loc)
		}
		p = stripLoc(p, loc)
	}
	parts, _, err := parsePath(p)
	return parts, err
}
