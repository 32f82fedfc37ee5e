package http

import (
	"bufio"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"hoard/store"
)

// WebDAV (RFC 4918, classes 1 and 2) on the same URL space, accounts and
// permissions as everything else. Written here rather than with
// golang.org/x/net/webdav: its PUT writes through an open file (not the
// store's atomic, fsynced, indexed ingest), its COPY and MOVE walk a
// FileSystem (not store.Copy and store.Move with their journal and
// events), its PROPFIND reads each folder whole, and its locks know no
// accounts. Each method decodes the request, makes its store call and
// encodes the reply; GET and HEAD stay hoard's (a folder answers with its
// listing).
//
// Locks live in store (davlock.go), bound to the account that took them.
// Dead properties live in store too (davprops.go: an extended attribute
// of the file); their values are kept as self-contained XML fragments
// (xnode.content). Of the live ones, the mtime (DAV:getlastmodified,
// Windows' Win32LastModifiedTime, or ownCloud's DAV:lastmodified in
// seconds) can be set, and reaches the index;
// Windows' other Win32* times and attributes are accepted and ignored.

// DAVConfig switches WebDAV.
type DAVConfig struct {
	Off bool // --no-dav: every WebDAV method answers 405
	Inf bool // --dav-inf: PROPFIND with Depth: infinity
}

const davMethods = "OPTIONS, GET, HEAD, PUT, POST, DELETE, PROPFIND, PROPPATCH, MKCOL, COPY, MOVE, LOCK, UNLOCK"

// isDAVMethod reports whether m is one of the methods only WebDAV has.
func isDAVMethod(m string) bool {
	switch m {
	case "PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK", http.MethodDelete:
		return true
	}
	return false
}

func (s *Server) davOptions(q *req) error {
	h := q.w.Header()
	if s.dav.Off {
		h.Set("Allow", "GET, HEAD, PUT, POST, OPTIONS")
	} else {
		h.Set("Allow", davMethods)
		h.Set("DAV", "1, 2")
		h.Set("MS-Author-Via", "DAV")
	}
	q.w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) davRoute(q *req) error {
	if s.dav.Off {
		q.w.Header().Set("Allow", "GET, HEAD, PUT, POST, OPTIONS")
		return errorf(http.StatusMethodNotAllowed, "method %s is not supported: WebDAV is off (--no-dav)", q.r.Method)
	}
	if q.share {
		return errorf(http.StatusMethodNotAllowed, "WebDAV is not available inside a share")
	}
	if err := s.cop.Check(q.r); err != nil {
		return errorf(http.StatusForbidden, "%s rejected by the cross-origin check: %v", q.r.Method, err)
	}
	switch q.r.Method {
	case "PROPFIND":
		return s.propfind(q)
	case "PROPPATCH":
		return s.proppatch(q)
	case "MKCOL":
		return s.mkcol(q)
	case http.MethodDelete:
		return s.davDelete(q)
	case "COPY", "MOVE":
		return s.davTransfer(q)
	case "LOCK":
		return s.davLock(q)
	case "UNLOCK":
		return s.davUnlock(q)
	}
	return errorf(http.StatusMethodNotAllowed, "method %s is not supported", q.r.Method)
}

func (q *req) loc0() store.Loc { return store.Loc{Vol: q.vol, Rel: q.rel} }

// davURL is the href of a URL path (components joined by "/").
func (q *req) davURL(p string, dir bool) string {
	u := q.loc + "/" + escapePath(p)
	if dir && !strings.HasSuffix(u, "/") {
		u += "/"
	}
	return u
}

// appendHref appends davURL(p, dir), XML-escaped, to b: what a PROPFIND
// writes for every member, built without allocating.
func (q *req) appendHref(b []byte, p string, dir bool) []byte {
	b = appendXMLText(b, q.loc)
	b = append(b, '/')
	for i := 0; i < len(p); i++ {
		switch ch := p[i]; {
		case ch == '/':
			b = append(b, '/')
		case ch == '&': // escapeName keeps these two, XML does not
			b = append(b, "&amp;"...)
		case ch == '\'':
			b = append(b, "&#39;"...)
		case 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' || strings.IndexByte("-._~!$()*+=@", ch) >= 0:
			b = append(b, ch)
		default:
			b = append(b, '%', "0123456789ABCDEF"[ch>>4], "0123456789ABCDEF"[ch&15])
		}
	}
	if dir && p != "" && p[len(p)-1] != '/' {
		b = append(b, '/')
	}
	return b
}

// xmlPlain reports whether s is written unchanged by xml.EscapeText:
// printable ASCII without its five special characters.
func xmlPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '<' || c == '>' || c == '&' || c == '\'' || c == '"' {
			return false
		}
	}
	return true
}

// writeXMLText is xml.EscapeText of s, without a copy of s when nothing
// needs escaping.
func writeXMLText(b *bufio.Writer, s string) {
	if xmlPlain(s) {
		b.WriteString(s)
		return
	}
	xml.EscapeText(b, []byte(s))
}

// appendXMLText appends xml.EscapeText of s to b.
func appendXMLText(b []byte, s string) []byte {
	if xmlPlain(s) {
		return append(b, s...)
	}
	var w strings.Builder
	xml.EscapeText(&w, []byte(s))
	return append(b, w.String()...)
}

// ifHeader evaluates the request's If header (RFC 4918 section 10.4): it
// returns the lock tokens it submits, or 412 when no list holds.
func (s *Server) ifHeader(q *req) ([]string, error) {
	h := q.r.Header.Values("If")
	if len(h) == 0 {
		return nil, nil
	}
	lists, err := parseIf(strings.Join(h, " "))
	if err != nil {
		return nil, err
	}
	for _, l := range lists {
		at := q.loc0()
		if l.tag != "" {
			parts, err := parseDestination(l.tag, q.host, q.loc)
			if err != nil {
				continue // a resource elsewhere never matches
			}
			v, rel := s.st.Resolve(parts)
			at = store.Loc{Vol: v, Rel: rel}
		}
		ok := true
		for _, c := range l.conds {
			var m bool
			switch {
			case c.token != "":
				m = at.Vol != nil && s.st.LockCovers(at, c.token)
			default:
				m = false
				if at.Vol != nil && at.Vol.Perms(q.user).Has(store.PermRead) {
					if fi, err := at.Vol.Stat(at.Rel); err == nil {
						m = strings.TrimPrefix(c.etag, "W/") == etag(fi)
					}
				}
			}
			if m == c.not {
				ok = false
				break
			}
		}
		if ok {
			return ifTokens(lists), nil
		}
	}
	return nil, errorf(http.StatusPreconditionFailed, "the If header's conditions do not hold")
}

// checkLocks evaluates the If header and refuses a change of at that a
// lock it does not hold covers.
func (s *Server) checkLocks(q *req, at store.Loc, c store.WriteCheck) ([]string, error) {
	toks, err := s.ifHeader(q)
	if err != nil {
		return nil, err
	}
	if at.Vol == nil {
		return toks, nil
	}
	return toks, s.st.CheckLocks(q.actor(), at, c, toks)
}

// ---- PROPFIND

type davRes struct {
	path  string // URL path components joined by "/"
	dir   bool
	size  int64
	mtime time.Time
	etag  string
	loc   store.Loc
	// dead: its dead properties, when read (propsRead)
	dead      []store.DeadProp
	propsRead bool
}

func (s *Server) propfind(q *req) error {
	depth, err := parseDepth(q.r.Header.Get("Depth"), -1)
	if err != nil {
		return err
	}
	if depth < 0 && !s.dav.Inf {
		h := q.w.Header()
		h.Set("Content-Type", "application/xml; charset=utf-8")
		q.w.WriteHeader(http.StatusForbidden)
		_, err := io.WriteString(q.w, xml.Header+`<D:error xmlns:D="DAV:"><D:propfind-finite-depth/></D:error>`+"\n")
		return err
	}
	body, err := readDAVBody(q)
	if err != nil {
		return err
	}
	pf, err := parsePropfind(body)
	if err != nil {
		return err
	}
	self := strings.Join(q.parts, "/")
	var top davRes
	virtual := q.vol == nil
	if !virtual {
		if !q.perm.Has(store.PermRead) {
			return q.denyRead()
		}
		fi, dead, err := s.statRes(q.vol, q.rel, pf)
		if errors.Is(err, store.ErrNotFound) && len(s.st.MountsBelow(q.parts)) > 0 {
			virtual = true
		} else if err != nil {
			if errors.Is(err, store.ErrNotDir) || errors.Is(err, store.ErrOutside) || errors.Is(err, store.ErrReserved) {
				err = store.ErrNotFound
			}
			if errors.Is(err, store.ErrNotFound) {
				return errorf(http.StatusNotFound, "not found: /%s", self)
			}
			return err
		} else {
			top = resOf(self, q.loc0(), fi)
			top.dead, top.propsRead = dead, pf.dead
		}
	}
	if virtual {
		if len(s.addMounts(q, nil)) == 0 {
			if len(s.st.MountsBelow(q.parts)) == 0 {
				return errorf(http.StatusNotFound, "not found: /%s", self)
			}
			return q.denyRead()
		}
		top = davRes{path: self, dir: true}
	}
	h := q.w.Header()
	h.Set("Content-Type", "application/xml; charset=utf-8")
	q.w.WriteHeader(http.StatusMultiStatus)
	bw := bufio.NewWriterSize(q.w, 64<<10)
	bw.WriteString(xml.Header + `<D:multistatus xmlns:D="DAV:">` + "\n")
	if err := s.propResponse(q, bw, pf, top); err != nil {
		return err
	}
	if top.dir && depth != 0 {
		if err := s.propChildren(q, bw, pf, top, depth, 0, virtual); err != nil {
			return err
		}
	}
	bw.WriteString("</D:multistatus>\n")
	return bw.Flush()
}

// statRes describes rel of v, with its dead properties when the request
// asks for any (one open of the file either way).
func (s *Server) statRes(v *store.Volume, rel string, pf propfindReq) (fs.FileInfo, []store.DeadProp, error) {
	if !pf.dead {
		fi, err := v.Stat(rel)
		return fi, nil, err
	}
	return v.StatProps(rel)
}

func resOf(p string, at store.Loc, fi fs.FileInfo) davRes {
	r := davRes{path: p, dir: fi.IsDir(), mtime: fi.ModTime(), loc: at}
	if !r.dir {
		r.size, r.etag = fi.Size(), etag(fi)
	}
	return r
}

// propChildren writes the members of the folder r (and with depth -1
// theirs), streaming: one folder read at a time, in batches.
func (s *Server) propChildren(q *req, bw *bufio.Writer, pf propfindReq, r davRes, depth, level int, virtual bool) error {
	if level > 64 {
		return nil
	}
	parts := strings.Split(r.path, "/")
	if r.path == "" {
		parts = nil
	}
	mounts := s.st.MountsBelow(parts)
	if !virtual && r.loc.Vol != nil {
		v := r.loc.Vol
		opt := store.ListOptions{Dots: v.Perms(q.user).Has(store.PermDot)}
		each := func(e store.Entry, dead []store.DeadProp) error {
			if _, ok := mounts[e.Name]; ok {
				// Its URL leads to (or toward) another volume: listed
				// below as the URL resolves, never the shadowed folder.
				return nil
			}
			// Everything is known from the folder's read (EachProps: and
			// the dead properties by name): no member is opened.
			c := davRes{path: path.Join(r.path, e.Name), dir: e.Dir, mtime: e.Mtime, loc: store.Loc{Vol: v, Rel: path.Join(r.loc.Rel, e.Name)}}
			if !e.Dir {
				c.size, c.etag = e.Size, etagOf(e.Ino, e.Size, e.Mtime)
			}
			c.dead, c.propsRead = dead, pf.dead
			if err := s.propResponse(q, bw, pf, c); err != nil {
				return err
			}
			// A link to a folder is listed, not walked (as archives
			// and the indexer do): links back up, or several to one
			// folder, would make the answer endless.
			if c.dir && depth < 0 && !e.Link {
				return s.propChildren(q, bw, pf, c, depth, level+1, false)
			}
			return nil
		}
		var err error
		if pf.dead {
			err = v.EachProps(q.r.Context(), r.loc.Rel, opt, each)
		} else {
			err = v.Each(q.r.Context(), r.loc.Rel, opt, func(e store.Entry) error { return each(e, nil) })
		}
		if err != nil {
			return err
		}
	}
	for name, vols := range mounts {
		if !s.visible(q, vols) {
			continue
		}
		c := davRes{path: path.Join(r.path, name), dir: true}
		cparts := append(append([]string{}, parts...), name)
		v, rel := s.st.Resolve(cparts)
		sub := true
		if v != nil && v.Perms(q.user).Has(store.PermRead) {
			if fi, dead, err := s.statRes(v, rel, pf); err == nil && fi.IsDir() {
				c.mtime, c.loc, sub = fi.ModTime(), store.Loc{Vol: v, Rel: rel}, false
				c.dead, c.propsRead = dead, pf.dead
			}
		}
		if err := s.propResponse(q, bw, pf, c); err != nil {
			return err
		}
		if depth < 0 {
			if err := s.propChildren(q, bw, pf, c, depth, level+1, sub); err != nil {
				return err
			}
		}
	}
	return nil
}

var liveProps = []string{"resourcetype", "displayname", "getcontentlength", "getlastmodified", "creationdate", "getetag", "getcontenttype", "supportedlock", "lockdiscovery"}

// liveProp writes the value of the live property name of r; false when r
// has no such property.
func (s *Server) liveProp(b *bufio.Writer, name string, r davRes, loc string) bool {
	switch name {
	case "resourcetype":
		if r.dir {
			b.WriteString("<D:resourcetype><D:collection/></D:resourcetype>")
		} else {
			b.WriteString("<D:resourcetype/>")
		}
	case "displayname":
		b.WriteString("<D:displayname>")
		writeXMLText(b, path.Base("/"+r.path))
		b.WriteString("</D:displayname>")
	case "getcontentlength":
		if r.dir {
			return false
		}
		b.WriteString("<D:getcontentlength>")
		b.Write(strconv.AppendInt(b.AvailableBuffer(), r.size, 10))
		b.WriteString("</D:getcontentlength>")
	case "getlastmodified":
		if r.mtime.IsZero() {
			return false
		}
		b.WriteString("<D:getlastmodified>")
		b.Write(r.mtime.UTC().AppendFormat(b.AvailableBuffer(), http.TimeFormat))
		b.WriteString("</D:getlastmodified>")
	case "creationdate":
		if r.mtime.IsZero() {
			return false
		}
		b.WriteString("<D:creationdate>")
		b.Write(r.mtime.UTC().AppendFormat(b.AvailableBuffer(), time.RFC3339))
		b.WriteString("</D:creationdate>")
	case "getetag":
		if r.etag == "" {
			return false
		}
		b.WriteString("<D:getetag>")
		writeXMLText(b, r.etag)
		b.WriteString("</D:getetag>")
	case "getcontenttype":
		if r.dir {
			return false
		}
		b.WriteString("<D:getcontenttype>")
		writeXMLText(b, contentType(path.Base(r.path)))
		b.WriteString("</D:getcontenttype>")
	case "supportedlock":
		b.WriteString("<D:supportedlock><D:lockentry><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry><D:lockentry><D:lockscope><D:shared/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry></D:supportedlock>")
	case "lockdiscovery":
		b.WriteString("<D:lockdiscovery>")
		if r.loc.Vol != nil {
			for _, l := range s.st.LocksOn(r.loc) {
				writeActiveLock(b, l, loc+"/"+escapePath(strings.TrimPrefix(l.Root, "/")))
			}
		}
		b.WriteString("</D:lockdiscovery>")
	default:
		return false
	}
	return true
}

func writeActiveLock(b *bufio.Writer, l store.Lock, href string) {
	scope, depth := "exclusive", "0"
	if l.Shared {
		scope = "shared"
	}
	if l.Infinite {
		depth = "infinity"
	}
	b.WriteString("<D:activelock><D:locktype><D:write/></D:locktype><D:lockscope><D:" + scope + "/></D:lockscope><D:depth>" + depth + "</D:depth>")
	if l.Owner != "" {
		b.WriteString("<D:owner>" + l.Owner + "</D:owner>")
	}
	b.WriteString("<D:timeout>Second-" + strconv.FormatInt(int64(l.Timeout/time.Second), 10) + "</D:timeout>")
	b.WriteString("<D:locktoken><D:href>")
	xml.EscapeText(b, []byte(l.Token))
	b.WriteString("</D:href></D:locktoken><D:lockroot><D:href>")
	xml.EscapeText(b, []byte(href))
	b.WriteString("</D:href></D:lockroot></D:activelock>")
}

// propResponse writes one D:response for r.
func (s *Server) propResponse(q *req, b *bufio.Writer, pf propfindReq, r davRes) error {
	b.WriteString("<D:response><D:href>")
	b.Write(q.appendHref(b.AvailableBuffer(), r.path, r.dir))
	b.WriteString("</D:href>")
	switch pf.mode {
	case "propname":
		b.WriteString("<D:propstat><D:prop>")
		for _, n := range liveProps {
			if hasLive(n, r) {
				b.WriteString("<D:" + n + "/>")
			}
		}
		for _, p := range r.dead {
			writeEmptyProp(b, xml.Name{Space: p.Space, Local: p.Local})
		}
		b.WriteString("</D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>")
	case "allprop":
		b.WriteString("<D:propstat><D:prop>")
		for _, n := range liveProps {
			s.liveProp(b, n, r, q.loc)
		}
		for _, p := range r.dead {
			writeDeadProp(b, p)
		}
		b.WriteString("</D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>")
	default:
		var few [8]xml.Name // on the stack for the usual request
		missing := few[:0]
		b.WriteString("<D:propstat><D:prop>")
		for _, n := range pf.props {
			if n.Space == nsDAV && s.liveProp(b, n.Local, r, q.loc) {
				continue
			}
			if i := slices.IndexFunc(r.dead, func(p store.DeadProp) bool { return p.Space == n.Space && p.Local == n.Local }); i >= 0 {
				writeDeadProp(b, r.dead[i])
				continue
			}
			missing = append(missing, n)
		}
		b.WriteString("</D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>")
		if len(missing) > 0 {
			b.WriteString("<D:propstat><D:prop>")
			for _, n := range missing {
				writeEmptyProp(b, n)
			}
			b.WriteString("</D:prop><D:status>HTTP/1.1 404 Not Found</D:status></D:propstat>")
		}
	}
	_, err := b.WriteString("</D:response>\n")
	return err
}

// hasLive reports whether r has the live property name.
func hasLive(name string, r davRes) bool {
	switch name {
	case "getcontentlength", "getcontenttype":
		return !r.dir
	case "getlastmodified", "creationdate":
		return !r.mtime.IsZero()
	case "getetag":
		return r.etag != ""
	}
	return true
}

// writeEmptyProp writes <name/> in its own namespace.
func writeEmptyProp(b *bufio.Writer, n xml.Name) {
	writePropStart(b, n)
	b.WriteString("/>")
}

// writeDeadProp writes a dead property with its value.
func writeDeadProp(b *bufio.Writer, p store.DeadProp) {
	n := xml.Name{Space: p.Space, Local: p.Local}
	writePropStart(b, n)
	b.WriteString(">")
	b.WriteString(p.Value)
	writePropEnd(b, n)
}

// writePropStart writes the start tag (unclosed: no ">") of the property
// n, in its own namespace (none: xmlns="").
func writePropStart(b *bufio.Writer, n xml.Name) {
	switch n.Space {
	case nsDAV:
		b.WriteString("<D:")
		b.WriteString(n.Local)
	case "":
		b.WriteString("<")
		b.WriteString(n.Local)
		b.WriteString(` xmlns=""`)
	default:
		b.WriteString("<X:")
		b.WriteString(n.Local)
		b.WriteString(` xmlns:X="`)
		writeXMLText(b, n.Space)
		b.WriteString(`"`)
	}
}

// writePropEnd writes the end tag of the property n.
func writePropEnd(b *bufio.Writer, n xml.Name) {
	switch n.Space {
	case nsDAV:
		b.WriteString("</D:")
	case "":
		b.WriteString("</")
	default:
		b.WriteString("</X:")
	}
	b.WriteString(n.Local)
	b.WriteString(">")
}

// ---- PROPPATCH

const nsMS = "urn:schemas-microsoft-com:"

func (s *Server) proppatch(q *req) error {
	if q.vol == nil {
		return errorf(http.StatusForbidden, "no volume is mounted at /%s", strings.Join(q.parts, "/"))
	}
	if err := q.need(store.PermWrite, "change properties"); err != nil {
		return err
	}
	if err := q.need(store.PermRead, "change properties"); err != nil {
		return err // before any look at the disk: no existence oracle
	}
	fi, err := q.vol.Stat(q.rel)
	if err != nil {
		return errorf(http.StatusNotFound, "not found: /%s", strings.Join(q.parts, "/"))
	}
	if _, err := s.checkLocks(q, q.loc0(), store.WriteCheck{}); err != nil {
		return q.davErr(err, nil)
	}
	body, err := readDAVBody(q)
	if err != nil {
		return err
	}
	ops, err := parseProppatch(body)
	if err != nil {
		return err
	}
	// All or nothing (RFC 4918 section 9.2): check every property first.
	status := make([]int, len(ops))
	why := make([]string, len(ops))
	var mtime time.Time
	var dead []store.PropOp
	var deadAt []int
	failed := false
	for i, o := range ops {
		status[i] = http.StatusOK
		switch {
		case !o.remove && (o.name == xml.Name{Space: nsDAV, Local: "getlastmodified"} || o.name == xml.Name{Space: nsMS, Local: "Win32LastModifiedTime"}):
			t, err := http.ParseTime(o.value)
			if err != nil {
				status[i], why[i] = http.StatusConflict, "not an HTTP date"
			} else {
				mtime = t
			}
		case !o.remove && o.name == xml.Name{Space: nsDAV, Local: "lastmodified"}:
			// ownCloud's way, which rclone uses (vendor owncloud or
			// nextcloud) to set a time without uploading again: seconds
			// since 1970.
			if t, ok := parseUnixSeconds(o.value); ok {
				mtime = t
			} else {
				status[i], why[i] = http.StatusConflict, "not seconds since 1970"
			}
		case o.name.Space == nsMS && strings.HasPrefix(o.name.Local, "Win32"):
			// Windows' creation and access times and attributes: taken, not kept
		case o.name.Space == nsDAV:
			status[i], why[i] = http.StatusForbidden, "a property of the DAV: namespace that cannot be changed"
		default:
			dead = append(dead, store.PropOp{Remove: o.remove, Prop: store.DeadProp{PropName: store.PropName{Space: o.name.Space, Local: o.name.Local}, Value: o.frag}})
			deadAt = append(deadAt, i)
		}
		if status[i] != http.StatusOK {
			failed = true
		}
	}
	if !failed {
		err := s.st.PatchProps(q.r.Context(), q.actor(), q.loc0(), dead, mtime)
		if err != nil {
			code := propPatchStatus(err)
			if code == 0 || len(dead) == 0 {
				return q.davErr(err, nil)
			}
			_, msg := statusOf(err)
			for _, i := range deadAt {
				status[i], why[i] = code, msg
			}
			failed = true
		}
	}
	if failed {
		for i := range status {
			if status[i] == http.StatusOK {
				status[i] = http.StatusFailedDependency
			}
		}
	}
	h := q.w.Header()
	h.Set("Content-Type", "application/xml; charset=utf-8")
	q.w.WriteHeader(http.StatusMultiStatus)
	b := bufio.NewWriter(q.w)
	b.WriteString(xml.Header + `<D:multistatus xmlns:D="DAV:"><D:response><D:href>`)
	xml.EscapeText(b, []byte(q.davURL(strings.Join(q.parts, "/"), fi.IsDir())))
	b.WriteString("</D:href>")
	for i, o := range ops {
		b.WriteString("<D:propstat><D:prop>")
		writeEmptyProp(b, o.name)
		fmt.Fprintf(b, "</D:prop><D:status>HTTP/1.1 %d %s</D:status>", status[i], http.StatusText(status[i]))
		if why[i] != "" {
			b.WriteString("<D:responsedescription>")
			xml.EscapeText(b, []byte(why[i]))
			b.WriteString("</D:responsedescription>")
		}
		b.WriteString("</D:propstat>")
	}
	b.WriteString("</D:response></D:multistatus>\n")
	return b.Flush()
}

// parseUnixSeconds reads a time given as whole seconds since 1970 (as
// X-OC-Mtime and ownCloud's DAV:lastmodified carry it).
func parseUnixSeconds(v string) (time.Time, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 || n > 1<<40 {
		return time.Time{}, false
	}
	return time.Unix(n, 0), true
}

// ---- MKCOL, DELETE, COPY, MOVE

func (s *Server) mkcol(q *req) error {
	if q.r.ContentLength > 0 || len(q.r.TransferEncoding) > 0 {
		return errorf(http.StatusUnsupportedMediaType, "MKCOL takes no body")
	}
	if q.vol == nil {
		return errorf(http.StatusForbidden, "no volume is mounted at /%s", strings.Join(q.parts, "/"))
	}
	if _, err := s.checkLocks(q, q.loc0(), store.WriteCheck{Member: true}); err != nil {
		return q.davErr(err, nil)
	}
	if _, err := s.st.Mkdir(q.r.Context(), q.actor(), q.loc0(), store.MkdirOptions{}); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errorf(http.StatusConflict, "the parent folder does not exist")
		}
		return q.davErr(err, davMkcolStatus)
	}
	q.w.Header().Set("Location", q.davURL(strings.Join(q.parts, "/"), true))
	return q.text(http.StatusCreated, "")
}

func (s *Server) davDelete(q *req) error {
	if q.r.URL.Fragment != "" {
		return errorf(http.StatusBadRequest, "the URL has a fragment")
	}
	if _, err := s.checkLocks(q, q.loc0(), store.WriteCheck{Tree: true, Member: true}); err != nil {
		return q.davErr(err, nil)
	}
	if _, err := s.st.Delete(q.r.Context(), q.actor(), q.loc0(), store.DeleteOptions{}); err != nil {
		return q.davErr(err, davDeleteStatus)
	}
	q.w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) davTransfer(q *req) error {
	move := q.r.Method == "MOVE"
	parts, err := parseDestination(q.r.Header.Get("Destination"), q.host, q.loc)
	if err != nil {
		return err
	}
	depth, err := parseDepth(q.r.Header.Get("Depth"), -1)
	if err != nil {
		return err
	}
	if depth == 1 || (move && depth == 0) {
		return errorf(http.StatusBadRequest, "Depth: %s is not allowed for %s", q.r.Header.Get("Depth"), q.r.Method)
	}
	overwrite := true
	switch strings.ToUpper(strings.TrimSpace(q.r.Header.Get("Overwrite"))) {
	case "", "T":
	case "F":
		overwrite = false
	default:
		return errorf(http.StatusBadRequest, "Overwrite: want T or F")
	}
	if err := s.routedElsewhere(parts); err != nil {
		return err
	}
	dv, drel := s.st.Resolve(parts)
	src, dst := q.loc0(), store.Loc{Vol: dv, Rel: drel}
	toks, err := s.checkLocks(q, src, store.WriteCheck{Tree: move, Member: move})
	if !move && store.KindOf(err) == store.KindLocked {
		err = nil // a copy reads its source: a lock there is no obstacle
	}
	if err != nil {
		return q.davErr(err, nil)
	}
	if dv != nil {
		if err := s.st.CheckLocks(q.actor(), dst, store.WriteCheck{Tree: true, Member: true}, toks); err != nil {
			return q.davErr(err, nil)
		}
	}
	over := davTransferStatus
	if !overwrite {
		over = davNoOverwriteStatus
	}
	var res store.DestResult
	opt := store.DestOptions{Overwrite: overwrite, Shallow: depth == 0}
	if move {
		res, err = s.st.Move(q.r.Context(), q.actor(), src, dst, opt)
	} else {
		res, err = s.st.Copy(q.r.Context(), q.actor(), src, dst, opt)
	}
	if err != nil {
		return q.davErr(err, over)
	}
	if res.Replaced {
		q.w.WriteHeader(http.StatusNoContent)
		return nil
	}
	q.w.Header().Set("Location", q.davURL(strings.Join(parts, "/"), res.Dir))
	return q.text(http.StatusCreated, "")
}

// routedElsewhere refuses a destination whose URL the server answers with
// something else than a volume (the share links' folder, and /.cpr/,
// copyparty's folder of its own pages, where hoard serves its metrics): a
// file put there could never be reached by its URL.
func (s *Server) routedElsewhere(parts []string) error {
	if s.shares != nil && len(parts) > 0 && parts[0] == s.shrName {
		return errorf(http.StatusForbidden, "/%s/ is where share links are served; nothing can be moved or copied there", s.shrName)
	}
	if len(parts) > 0 && parts[0] == ".cpr" {
		return errorf(http.StatusForbidden, "/.cpr/ is the server's own; nothing can be moved or copied there")
	}
	return nil
}

// ---- LOCK, UNLOCK

func (s *Server) davLock(q *req) error {
	if q.vol == nil {
		return errorf(http.StatusForbidden, "no volume is mounted at /%s", strings.Join(q.parts, "/"))
	}
	body, err := readDAVBody(q)
	if err != nil {
		return err
	}
	timeout := parseTimeout(q.r.Header.Get("Timeout"))
	at := q.loc0()
	if len(strings.TrimSpace(string(body))) == 0 {
		// A refresh: the lock's token in the If header.
		lists, err := parseIf(strings.Join(q.r.Header.Values("If"), " "))
		if err != nil {
			return errorf(http.StatusBadRequest, "a LOCK without a body refreshes a lock: it needs the lock's token in an If header")
		}
		toks := ifTokens(lists)
		if len(toks) != 1 {
			return errorf(http.StatusBadRequest, "a lock refresh needs exactly one lock token")
		}
		l, err := s.st.RefreshLock(q.actor(), at, toks[0], timeout)
		if err != nil {
			return q.davErr(err, davRefreshStatus)
		}
		return writeLock(q, l, http.StatusOK)
	}
	lr, err := parseLockinfo(body)
	if err != nil {
		return err
	}
	depth, err := parseDepth(q.r.Header.Get("Depth"), -1)
	if err != nil {
		return err
	}
	if depth == 1 {
		return errorf(http.StatusBadRequest, "Depth: 1 is not allowed for LOCK")
	}
	toks, err := s.ifHeader(q)
	if err != nil {
		return err
	}
	l, made, err := s.st.LockOrMake(q.r.Context(), q.actor(), at, store.LockRequest{Infinite: depth < 0, Shared: lr.shared, Owner: lr.owner, Timeout: timeout, Tokens: toks})
	if err != nil {
		return q.davErr(err, nil)
	}
	code := http.StatusOK
	if made {
		code = http.StatusCreated
	}
	q.w.Header().Set("Lock-Token", "<"+l.Token+">")
	return writeLock(q, l, code)
}

func writeLock(q *req, l store.Lock, code int) error {
	h := q.w.Header()
	h.Set("Content-Type", "application/xml; charset=utf-8")
	q.w.WriteHeader(code)
	b := bufio.NewWriter(q.w)
	b.WriteString(xml.Header + `<D:prop xmlns:D="DAV:"><D:lockdiscovery>`)
	writeActiveLock(b, l, q.loc+"/"+escapePath(strings.TrimPrefix(l.Root, "/")))
	b.WriteString("</D:lockdiscovery></D:prop>\n")
	return b.Flush()
}

func (s *Server) davUnlock(q *req) error {
	tok := strings.TrimSpace(q.r.Header.Get("Lock-Token"))
	if len(tok) < 3 || tok[0] != '<' || tok[len(tok)-1] != '>' {
		return errorf(http.StatusBadRequest, "UNLOCK needs a Lock-Token header: <token>")
	}
	if q.vol == nil {
		return errorf(http.StatusConflict, "no lock with that token covers /%s", strings.Join(q.parts, "/"))
	}
	if err := s.st.Unlock(q.actor(), q.loc0(), tok[1:len(tok)-1]); err != nil {
		return q.davErr(err, nil)
	}
	q.w.WriteHeader(http.StatusNoContent)
	return nil
}

// ---- PUT

// davClient reports whether a PUT comes from a WebDAV client, which
// expects WebDAV's PUT: the file at the URL is replaced (with d), a
// missing parent folder is 409, and the reply is 201 or 204 without
// copyparty's body. Signs: rclone's X-OC-Mtime, an If header, or the
// User-Agent of a known WebDAV client (neon is litmus', cadaver's and
// davfs2's library). Other PUTs keep copyparty's rules (a taken name gets
// a new one; parents are made).
func davClient(r *http.Request) bool {
	if r.Header.Get("X-OC-Mtime") != "" || r.Header.Get("If") != "" {
		return true
	}
	ua := r.Header.Get("User-Agent")
	for _, s := range []string{"neon/", "rclone/", "davfs2/", "Microsoft-WebDAV", "WebDAVFS", "WebDAVLib", "gvfs/", "Cyberduck", "litmus/", "cadaver/"} {
		if strings.Contains(ua, s) {
			return true
		}
	}
	return false
}

// davPut stores a WebDAV PUT through the same ingest as every upload.
func (s *Server) davPut(q *req) error {
	self := strings.Join(q.parts, "/")
	if q.slash || q.rel == "" {
		return errorf(http.StatusMethodNotAllowed, "PUT of a folder: /%s", self)
	}
	at := q.loc0()
	fi, err := q.vol.Stat(q.rel)
	exists := err == nil
	if exists && fi.IsDir() {
		return errorf(http.StatusMethodNotAllowed, "/%s is a folder", self)
	}
	toks, err := s.checkLocks(q, at, store.WriteCheck{Member: !exists})
	if err != nil {
		return q.davErr(err, nil)
	}
	if !exists {
		fi = nil
	}
	if err := s.st.PutCheck(q.actor(), at, fi, toks); err != nil {
		return q.davErr(err, nil)
	}
	dir, name := path.Split(q.rel)
	dir = strings.TrimSuffix(dir, "/")
	o, err := q.uploadOptions(q.vol.Flags().PutCK)
	if err != nil {
		return err
	}
	o.replace, o.apnd = exists, false
	in := o.ingest(q, o.finalName(name), q.r.ContentLength)
	mt := q.r.Header.Get("X-OC-Mtime")
	if mt != "" {
		f, err := strconv.ParseFloat(mt, 64)
		// Up to 2262: a time in nanoseconds since 1970 (what the
		// index and the group commit keep) fits in 64 bits until then.
		if err != nil || !(f >= 0 && f < math.MaxInt64/1e9) {
			return errorf(http.StatusBadRequest, "X-OC-Mtime: %q: want seconds since 1970, before 2262", mt)
		}
		sec, frac := math.Modf(f)
		in.Mtime = time.Unix(int64(sec), int64(frac*1e9))
	}
	res, err := q.vol.Ingest(q.r.Context(), dir, newIdleReader(q, q.r.Body), in)
	if err != nil {
		return err
	}
	s.log.Info("upload", "id", q.id, "path", "/"+path.Join(q.vol.VPath, res.Rel), "bytes", res.Size, "user", q.acct(), "ip", q.ip, "dav", true)
	h := q.w.Header()
	if mt != "" {
		h.Set("X-OC-Mtime", "accepted")
	}
	h.Set("ETag", etag(res.Info))
	if exists {
		q.w.WriteHeader(http.StatusNoContent)
		return nil
	}
	h.Set("Location", q.urlOf(res.Rel))
	return q.text(http.StatusCreated, "")
}
