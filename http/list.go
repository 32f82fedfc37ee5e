package http

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"hoard/store"
)

// lsEntry is one item of a ?ls listing, in copyparty's shape plus "name".
type lsEntry struct {
	Lead string         `json:"lead"`
	Href string         `json:"href"`
	Name string         `json:"name"`
	Sz   int64          `json:"sz"`
	Ext  string         `json:"ext"`
	Ts   int64          `json:"ts"`
	Tags map[string]any `json:"tags"`

	dir bool
}

// lsReply is the ?ls JSON body.
type lsReply struct {
	Dirs     []lsEntry `json:"dirs"`
	Files    []lsEntry `json:"files"`
	Taglist  []string  `json:"taglist"`
	Srvinf   string    `json:"srvinf"`
	Acct     string    `json:"acct"`
	Perms    []string  `json:"perms"`
	Idx      bool      `json:"idx"`
	Itag     bool      `json:"itag"`
	Dsort    string    `json:"dsort"`
	Lifetime int64     `json:"lifetime"`
	Frand    bool      `json:"frand"`
	Logues   [2]string `json:"logues"`
	Readmes  [2]string `json:"readmes"`
}

// listing is a folder's visible content for one user.
type listing struct {
	path    string // URL path without slashes at the ends
	entries []lsEntry
	perms   []string
	acct    string
	srvinf  string
	vol     *store.Volume // nil for a virtual folder
}

func (q *req) acct() string {
	if q.user == "" {
		return "*"
	}
	return q.user
}

// folder answers a GET of a folder: ?tree, ?ls[=t|v], or an HTML page.
func (s *Server) folder(q *req) error {
	if q.route == "" {
		q.route = "list"
	}
	query := q.query
	if _, ok := query["tree"]; ok {
		if err := q.need(store.PermRead|store.PermWrite|store.PermGet, "list"); err != nil {
			return err
		}
		return s.tree(q)
	}
	_, hasLs := query["ls"]
	if !q.perm.Any(store.PermRead | store.PermWrite) {
		return q.denyRead()
	}
	if !hasLs && !q.slash && len(q.parts) > 0 {
		// Pages need the slash form so their relative links resolve.
		u := q.loc + "/" + escapePath(strings.Join(q.parts, "/")) + "/"
		if q.r.URL.RawQuery != "" {
			u += "?" + q.r.URL.RawQuery
		}
		http.Redirect(q.w, q.r, u, http.StatusMovedPermanently)
		return nil
	}
	l := listing{path: strings.Join(q.parts, "/"), perms: q.perm.Names(), acct: q.acct(), vol: q.vol}
	if free, total, err := q.vol.Usage(); err == nil {
		l.srvinf = store.HumanSize(int64(free)) + " free of " + store.HumanSize(int64(total))
	}
	if q.perm.Has(store.PermRead) {
		opt := store.ListOptions{Lstat: has(query, "lt"), Dots: has(query, "dots") && q.perm.Has(store.PermDot)}
		ents, err := q.vol.List(q.r.Context(), q.rel, opt)
		if err != nil {
			return err
		}
		// An entry where another volume is mounted is that volume's by
		// URL: it is not listed from this volume's disk (neither its
		// name nor its dates), only as a mount (addMounts) to whoever may
		// see that volume, and never inside a share.
		mounts := s.st.MountsBelow(splitURL(path.Join(q.vol.VPath, q.rel)))
		for _, e := range ents {
			if _, ok := mounts[e.Name]; ok && s.st.Shadowed(q.vol, path.Join(q.rel, e.Name)) {
				continue
			}
			l.entries = append(l.entries, q.entry(e))
		}
	}
	if !q.share {
		l.entries = s.addMounts(q, l.entries)
	}
	return s.writeListing(q, l)
}

// virtualFolder answers a GET of a URL path that no volume covers but
// that leads to volumes mounted below it (e.g. "/" with only /music).
func (s *Server) virtualFolder(q *req) error {
	mounts := s.st.MountsBelow(q.parts)
	if len(mounts) == 0 {
		return errorf(http.StatusNotFound, "not found: /%s", strings.Join(q.parts, "/"))
	}
	if wantsArchive(q) {
		return s.archive(q, nil) // the volumes below that the user may read
	}
	ents := s.addMounts(q, nil)
	if len(ents) == 0 {
		if q.user == "" {
			return errUnauthorized
		}
		return errorf(http.StatusForbidden, "user %s may not see anything in /%s", q.user, strings.Join(q.parts, "/"))
	}
	if _, ok := q.query["tree"]; ok {
		return s.tree(q)
	}
	if !q.slash && len(q.parts) > 0 && !has(q.query, "ls") {
		http.Redirect(q.w, q.r, q.loc+"/"+escapePath(strings.Join(q.parts, "/"))+"/", http.StatusMovedPermanently)
		return nil
	}
	return s.writeListing(q, listing{path: strings.Join(q.parts, "/"), entries: ents, perms: []string{}, acct: q.acct()})
}

// splitURL splits a URL path without slashes at the ends into its
// components (none for "").
func splitURL(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func has(q map[string][]string, k string) bool {
	_, ok := q[k]
	return ok
}

// entry converts a store entry into the listing's shape.
func (q *req) entry(e store.Entry) lsEntry {
	le := lsEntry{Lead: "-", Name: e.Name, Href: escapeName(e.Name), Sz: e.Size, Ts: e.Mtime.Unix(), Tags: map[string]any{}, dir: e.Dir}
	if e.Dir {
		le.Href += "/"
		le.Ext = "---"
		return le
	}
	le.Ext = "%"
	if i := strings.LastIndexByte(e.Name, '.'); i >= 0 && i < len(e.Name)-1 {
		le.Ext = e.Name[i+1:]
		if len(le.Ext) > 16 {
			le.Ext = le.Ext[:16]
		}
	}
	// No key inside a share: it needs none, and the key opens the file at
	// its own URL, outside the share, after the share is gone.
	if q.vol != nil && q.vol.Flags().FK > 0 && q.perm.Has(store.PermRead) && !q.share {
		rel := path.Join(q.rel, e.Name)
		if fi, err := q.vol.Stat(rel); err == nil {
			le.Href += "?k=" + q.vol.FileKey(rel, fi)
		}
	}
	return le
}

// addMounts adds the volumes mounted directly below this folder that the
// user may use, as folders, unless a real folder of that name is listed.
func (s *Server) addMounts(q *req, ents []lsEntry) []lsEntry {
	for name, vols := range s.st.MountsBelow(q.parts) {
		if !s.visible(q, vols) || slices.ContainsFunc(ents, func(e lsEntry) bool { return e.dir && e.Name == name }) {
			continue
		}
		e := lsEntry{Lead: "-", Name: name, Href: escapeName(name) + "/", Ext: "---", Tags: map[string]any{}, dir: true}
		for _, v := range vols {
			if fi, err := v.Stat(""); err == nil && strings.Count(v.VPath, "/") == len(q.parts) {
				e.Ts = fi.ModTime().Unix()
			}
		}
		ents = append(ents, e)
	}
	slices.SortStableFunc(ents, func(a, b lsEntry) int {
		if a.dir != b.dir {
			if a.dir {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return ents
}

func (s *Server) visible(q *req, vols []*store.Volume) bool {
	for _, v := range vols {
		if v.Perms(q.user) != 0 {
			return true
		}
	}
	return false
}

func (s *Server) writeListing(q *req, l listing) error {
	h := q.w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	ls, hasLs := q.query["ls"]
	if !hasLs {
		return writeHTML(q, l)
	}
	switch ls[0] {
	case "":
		rep := lsReply{Dirs: []lsEntry{}, Files: []lsEntry{}, Taglist: []string{}, Srvinf: l.srvinf, Acct: l.acct, Perms: l.perms, Dsort: "href"}
		for _, e := range l.entries {
			if e.dir {
				rep.Dirs = append(rep.Dirs, e)
			} else {
				rep.Files = append(rep.Files, e)
			}
		}
		if l.vol != nil {
			rep.Lifetime = int64(l.vol.Flags().Lifetime.Seconds())
			rep.Frand = l.vol.Flags().Rand
			rep.Idx = l.vol.Flags().E2D
			rep.Itag = l.vol.Flags().E2T
		}
		h.Set("Content-Type", "application/json")
		return json.NewEncoder(q.w).Encode(rep)
	case "t", "txt":
		h.Set("Content-Type", "text/plain; charset=utf-8")
		_, err := io.WriteString(q.w, textListing(l, false))
		return err
	case "v":
		h.Set("Content-Type", "text/plain; charset=utf-8")
		_, err := io.WriteString(q.w, textListing(l, true))
		return err
	}
	return errorf(http.StatusBadRequest, "ls=%q: want ls (JSON), ls=t (text) or ls=v (terminal)", ls[0])
}

// textListing renders ?ls=t (plain) or ?ls=v (ANSI colours), copyparty's
// layout: header lines, then "date  size  name" per entry, folders first.
func textListing(l listing, color bool) string {
	var b strings.Builder
	quoted := make([]string, len(l.perms))
	for i, p := range l.perms {
		quoted[i] = "'" + p + "'"
	}
	fmt.Fprintf(&b, "# acct: %s\n# perms: [%s]\n# srvinf: %s\n", l.acct, strings.Join(quoted, ", "), l.srvinf)
	width := 1
	sizes := make([]string, len(l.entries))
	for i, e := range l.entries {
		sizes[i] = commas(e.Sz)
		width = max(width, len(sizes[i]))
	}
	for i, e := range l.entries {
		name := e.Name
		if e.dir {
			name += "/"
		}
		t := time.Unix(e.Ts, 0).UTC()
		if !color {
			fmt.Fprintf(&b, "%s  %*s  %s\n", t.Format("2006-01-02 15:04:05"), width, sizes[i], name)
			continue
		}
		c := '0'
		hs := terseSize(e.Sz)
		switch hs[len(hs)-1] {
		case 'B':
			c = '6'
		case 'K':
			c = '5'
		case 'M':
			c = '1'
		case 'G':
			c = '3'
		}
		fmt.Fprintf(&b, "\x1b[0;7;36m\x1b[7m%s\x1b[27m%s\x1b[0;1m%s\x1b[0;36m%s\x1b[0m%s\x1b[0;3%cm %5s\x1b[0m ",
			t.Format("2006"), t.Format("0102"), t.Format("15"), t.Format("04"), t.Format("05"), c, hs)
		if e.dir {
			fmt.Fprintf(&b, "\x1b[94m%s\x1b[0m\n", name)
		} else {
			fmt.Fprintf(&b, "%s\n", name)
		}
	}
	if color {
		b.WriteString("\n\x1b[0m")
	}
	return b.String()
}

func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// terseSize is copyparty's short size: 4.0K, 1.17M, 12B.
func terseSize(n int64) string {
	f := float64(n)
	units := "BKMGTPE"
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if i > 0 && !strings.Contains(s, ".") {
		s += ".0"
	}
	if len(s) > 4 {
		s = s[:4]
	}
	return strings.TrimSuffix(s, ".") + string(units[i])
}

// tree answers ?tree=. (one level of subfolders) and ?tree (the chain
// from the root down to this folder), as {"a": [...], "k<name>": {...}}.
func (s *Server) tree(q *req) error {
	v := q.query.Get("tree")
	var out map[string]any
	switch v {
	case ".", "..":
		out = map[string]any{"a": s.subdirs(q, q.parts)}
	case "":
		out = s.treeAt(q, 0)
	default:
		return errorf(http.StatusBadRequest, "tree=%q: want tree=. or tree", v)
	}
	q.w.Header().Set("Content-Type", "application/json")
	q.w.Header().Set("Cache-Control", "no-store")
	return json.NewEncoder(q.w).Encode(out)
}

func (s *Server) treeAt(q *req, i int) map[string]any {
	a := s.subdirs(q, q.parts[:i])
	node := map[string]any{}
	if i < len(q.parts) {
		child := escapeName(q.parts[i])
		a = slices.DeleteFunc(a, func(n string) bool { return n == child })
		node["k"+child] = s.treeAt(q, i+1)
	}
	node["a"] = a
	return node
}

// subdirs lists the escaped names of the folders below parts that the user
// may see: real folders where they can read, and mounted volumes.
func (s *Server) subdirs(q *req, parts []string) []string {
	names := []string{}
	dots := has(q.query, "dots")
	if v, rel := s.st.Resolve(parts); v != nil && v.Perms(q.user).Has(store.PermRead) {
		ents, _ := v.List(q.r.Context(), rel, store.ListOptions{Dots: dots && v.Perms(q.user).Has(store.PermDot)})
		mounts := s.st.MountsBelow(parts)
		for _, e := range ents {
			if _, ok := mounts[e.Name]; ok && s.st.Shadowed(v, path.Join(rel, e.Name)) {
				continue // another volume's by URL: below, if visible
			}
			if e.Dir {
				names = append(names, escapeName(e.Name))
			}
		}
	}
	for name, vols := range s.st.MountsBelow(parts) {
		if s.visible(q, vols) && !slices.Contains(names, escapeName(name)) {
			names = append(names, escapeName(name))
		}
	}
	slices.Sort(names)
	return names
}

var pageTmpl = template.Must(template.New("ls").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>/{{.Path}}</title><link rel="stylesheet" href="{{.CSS}}">
<script type="module" src="{{.JS}}" nonce="{{.Nonce}}"></script>
</head><body data-loc="{{.Loc}}"{{if .Share}} data-share=""{{end}}>
<header id="top"><nav class="crumbs" aria-label="breadcrumb"><a href="{{.Loc}}/">/</a>{{range .Crumbs}}<a href="{{.Href}}">{{.Name}}</a>/{{end}}</nav>
{{if .ShareOut}}<div class="acct"><form method="post" action="{{.ShareOut}}"><input type="hidden" name="act" value="logout">logged in to this share <button>log out</button></form></div>{{end}}{{if not .Share}}<div class="acct">{{if .User}}<form method="post"><input type="hidden" name="act" value="logout">logged in as <b>{{.User}}</b> <button>logout</button></form>{{else}}<form method="post"><input type="hidden" name="act" value="login"><label for="cppwd">password</label> <input type="password" id="cppwd" name="cppwd" autocomplete="current-password" required> <button>log in</button></form>{{end}}</div>{{end}}</header>
<main id="app">
{{if .Writable}}<form method="post" enctype="multipart/form-data"><input type="hidden" name="act" value="bput"><input type="file" name="f" multiple aria-label="files to upload"> <button>upload</button></form>{{end}}
<table class="ls"><thead><tr><th>name</th><th>size</th><th>modified (UTC)</th></tr></thead><tbody>
{{if .Path}}<tr><td><a href="../">../</a></td><td></td><td></td></tr>{{end}}
{{range .Rows}}<tr><td><a href="./{{.Href}}">{{.Name}}</a></td><td class="s">{{.Size}}</td><td>{{.Date}}</td></tr>
{{end}}</tbody></table>
{{if .More}}<noscript><table class="ls more"><tbody>
{{range .More}}<tr><td><a href="./{{.Href}}">{{.Name}}</a></td><td class="s">{{.Size}}</td><td>{{.Date}}</td></tr>
{{end}}</tbody></table></noscript>
{{end}}{{if .Empty}}<p>{{if .Readable}}this folder is empty{{else}}you may upload here, but not see what is here{{end}}</p>{{end}}
</main>
</body></html>
`))

type pageRow struct{ Href, Name, Size, Date string }

// htmlRowsFirst is how many entries the HTML listing puts in its table;
// the rest follow in a <noscript> (writeHTML).
const htmlRowsFirst = 200

// writeHTML renders the listing for a browser. Names are escaped by
// html/template; hrefs start with "./" so no name can read as a scheme;
// the page's only script is the UI's module from /.cpr/ (it reads ?ls and
// builds the interface; without it the table works alone), and its CSP
// allows no other.
func writeHTML(q *req, l listing) error {
	data := struct {
		Path               string
		Rows, More         []pageRow
		Writable, Readable bool
		Empty              bool
		CSS, JS, Loc, User string
		Nonce              string
		Crumbs             []pageRow
		Share              bool
		ShareOut           string
	}{Share: q.share, ShareOut: q.shareOut, CSS: q.uiURL("ui.css"), JS: q.uiURL("ui.js"), Loc: q.loc, User: q.user, Path: l.path, Writable: slices.Contains(l.perms, "write"), Readable: slices.Contains(l.perms, "read") || l.vol == nil, Empty: len(l.entries) == 0}
	href := q.loc + "/"
	for _, p := range q.parts {
		href += escapeName(p) + "/"
		data.Crumbs = append(data.Crumbs, pageRow{Href: href, Name: p})
	}
	for _, e := range l.entries {
		name, size := e.Name, commas(e.Sz)
		if e.dir {
			name, size = name+"/", ""
		}
		data.Rows = append(data.Rows, pageRow{Href: e.Href, Name: name, Size: size, Date: time.Unix(e.Ts, 0).UTC().Format("2006-01-02 15:04:05")})
	}
	// Past the first screenfuls the rows go in a <noscript>: a browser
	// without script shows them as a second table; one with script reads
	// them as one run of text instead of building and laying out a table
	// its script replaces at once (for 10,000 entries that was most of a
	// second before the script could start).
	if len(data.Rows) > htmlRowsFirst {
		data.Rows, data.More = data.Rows[:htmlRowsFirst], data.Rows[htmlRowsFirst:]
	}
	h := q.w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	csp, nonce := uiPolicy(true)
	data.Nonce = nonce
	h.Set("Content-Security-Policy", csp)
	return pageTmpl.Execute(q.w, data)
}
