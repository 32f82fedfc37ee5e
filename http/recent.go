package http

import (
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	"hoard/idx"
	"hoard/store"
	"hoard/up2k"
)

// uploadFilter is ?filter= of ?ups and ?ru: a case-insensitive substring
// of the path; a leading ^ anchors it at the start, a trailing $ at the
// end. Nothing else is special (no regular expressions).
func uploadFilter(f string) func(vp string) bool {
	f = strings.ToLower(f)
	pre := strings.HasPrefix(f, "^")
	suf := strings.HasSuffix(f, "$") && len(f) > 1
	f = strings.TrimPrefix(f, "^")
	if suf {
		f = strings.TrimSuffix(f, "$")
	}
	return func(vp string) bool {
		vp = strings.ToLower(vp)
		switch {
		case pre && suf:
			return vp == f
		case pre:
			return strings.HasPrefix(vp, f)
		case suf:
			return strings.HasSuffix(vp, f)
		}
		return strings.Contains(vp, f)
	}
}

// uploadPath is the URL path of file rel of v, unescaped (what filters
// match).
func uploadPath(v *store.Volume, rel string) string {
	if v.VPath == "" {
		return "/" + rel
	}
	return "/" + v.VPath + "/" + rel
}

// uploadHref is uploadPath escaped for a URL (what the lists show).
func uploadHref(v *store.Volume, rel string) string {
	return "/" + escapePath(strings.TrimPrefix(uploadPath(v, rel), "/"))
}

const recentMax = 1000 // records one ?ups or ?ru answer holds

// upsRow is one record of ?ups; Pd (percent done) only for unfinished
// uploads.
type upsRow struct {
	At int64  `json:"at"`
	Vp string `json:"vp"`
	Pd *int   `json:"pd,omitempty"`
	Sz int64  `json:"sz"`
}

// ups lists the requester's own recent uploads: same address and same
// account (copyparty's default), in volumes where the requester may still
// read or write; completed ones only within the unpost window. The body
// carries copyparty's newer shape (f: unfinished up2k uploads, then
// finished ones; nu, nc) and its older one (u, c).
func (s *Server) ups(q *req) error {
	match := uploadFilter(q.query.Get("filter"))
	mine := func(vol *store.Volume, rel, ip, user string) bool {
		return ip == q.ip && user == q.user && vol.Perms(q.user).Any(store.PermRead|store.PermWrite) && match(uploadPath(vol, rel))
	}
	unf := []upsRow{}
	if s.up != nil {
		for _, u := range s.up.UnfinishedAt(q.r.Context(), q.ip, func(u *up2k.Unfinished) bool {
			return mine(u.Vol, u.Rel, u.IP, u.User)
		}) {
			pd := u.Percent()
			unf = append(unf, upsRow{At: u.Started.Unix(), Vp: q.loc + uploadHref(u.Vol, u.Rel), Pd: &pd, Sz: u.Size})
			if len(unf) == recentMax {
				break
			}
		}
	}
	// Completed uploads only while their uploader may still unpost them
	// (copyparty's rule): account and address are all that tell
	// uploaders apart, so anonymous uploaders behind one address see
	// each other's, for that long and no longer; none with unpost off.
	rows := []upsRow{}
	body := map[string]any{}
	if window := s.st.UnpostWindow(); window > 0 {
		since := time.Now().Add(-window)
		recs := s.recent.Recent(recentMax, func(u *idx.Upload) bool {
			return !u.At.Before(since) && mine(u.Vol, u.Rel, u.IP, u.User)
		})
		for _, u := range recs {
			rows = append(rows, upsRow{At: u.At.Unix(), Vp: q.loc + uploadHref(u.Vol, u.Rel), Sz: u.Size})
		}
	} else {
		body["noc"] = 1 // copyparty: unpost is off
	}
	body["f"], body["nu"], body["nc"], body["u"], body["c"] = append(slices.Clone(unf), rows...), len(unf), len(rows), unf, rows
	return sendJSON(q, body)
}

// ruRow is one record of ?ru.
type ruRow struct {
	Vp string `json:"vp"`
	Sz int64  `json:"sz"`
	IP string `json:"ip"`
	At int64  `json:"at"`
	Un string `json:"un"`
}

// ru lists everyone's recent uploads in the volumes the requester is admin
// of: JSON with ?j, an HTML table otherwise.
func (s *Server) ru(q *req) error {
	if err := s.needAdmin(q); err != nil {
		return err
	}
	filter := q.query.Get("filter")
	match := uploadFilter(filter)
	recs := s.recent.Recent(recentMax, func(u *idx.Upload) bool {
		return u.Vol.Perms(q.user).Has(store.PermAdmin) && match(uploadPath(u.Vol, u.Rel))
	})
	rows := make([]ruRow, 0, len(recs))
	for i := range recs {
		u := &recs[i]
		un := u.User
		if un == "" {
			un = "*"
		}
		rows = append(rows, ruRow{Vp: q.loc + uploadHref(u.Vol, u.Rel), Sz: u.Size, IP: u.IP, At: u.At.Unix(), Un: un})
	}
	body := map[string]any{"now": time.Now().Unix(), "filter": filter, "ups": rows}
	if has(q.query, "j") {
		return sendJSON(q, body)
	}
	return writePage(q, ruPage, struct {
		Filter string
		Rows   []ruRow
	}{filter, rows})
}

var ruPage = template.Must(template.New("ru").Funcs(template.FuncMap{
	"time": func(t int64) string { return time.Unix(t, 0).UTC().Format("2006-01-02 15:04:05") },
}).Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>recent uploads</title></head><body>
<h1>recent uploads</h1>
<form><input type="hidden" name="ru"><input name="filter" value="{{.Filter}}"> <button>filter</button></form>
<table><tr><th>time (UTC)</th><th>size</th><th>path</th><th>ip</th><th>user</th></tr>
{{range .Rows}}<tr><td>{{time .At}}</td><td>{{.Sz}}</td><td><a href="{{.Vp}}">{{.Vp}}</a></td><td>{{.IP}}</td><td>{{.Un}}</td></tr>
{{end}}</table></body></html>
`))

// pageCSP is the policy of hoard's own HTML pages: no script at all.
const pageCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; media-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'self'"

// writePage renders an HTML page under pageCSP.
func writePage(q *req, t *template.Template, data any) error {
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return err
	}
	h := q.w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
	q.w.WriteHeader(http.StatusOK)
	if q.r.Method != http.MethodHead {
		q.w.Write([]byte(b.String()))
	}
	return nil
}
