package http

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"hoard/idx"
	"hoard/store"
)

// searchTimeout bounds one search.
const searchTimeout = 30 * time.Second

// tagOrder is the display order of tags (tag_order lists those present).
var tagOrder = []string{"artist", "album", "title", "track", "year", "genre", "rate", "dur"}

// searchHit is one hit: the interface description's rp/fn/sz/mt/tags
// (rp as copyparty sends it: the URL-quoted URL path, mount point included,
// without the leading slash), copyparty's ts, and href, the URL path to
// fetch the file.
type searchHit struct {
	RP   string            `json:"rp"`
	FN   string            `json:"fn"`
	SZ   int64             `json:"sz"`
	MT   int64             `json:"mt"`
	TS   int64             `json:"ts"`
	Tags map[string]string `json:"tags"`
	Href string            `json:"href"`
}

type searchReply struct {
	Hits     []searchHit `json:"hits"`
	TagOrder []string    `json:"tag_order"`
	Trunc    bool        `json:"trunc"`
}

// searchFail answers a failed search with a JSON error body, the status
// from statusOf.
func (s *Server) searchFail(q *req, err error) error {
	code, msg := statusOf(err)
	switch {
	case code == statusCanceled:
		return err
	case code >= 500 && store.KindOf(err) == 0:
		s.log.Error("search failed", "id", q.id, "err", err)
		msg = "search failed: the index could not be read"
	}
	if ra := retryAfter(err); ra != "" {
		q.w.Header().Set("Retry-After", ra)
	}
	return searchErr(q, code, msg)
}

// searchErr answers a search with a JSON error body.
func searchErr(q *req, code int, msg string) error {
	if code == http.StatusUnauthorized {
		q.w.Header().Set("WWW-Authenticate", `Basic realm="hoard", charset="UTF-8"`)
	}
	return writeJSON(q, code, map[string]string{"error": msg})
}

// search answers a JSON POST that is a search: text ({"q", "n"}) or hash
// ({"srch": true, "hash": [...]}) over every volume the user may read.
func (s *Server) search(q *req, fields map[string]json.RawMessage, jerr error) error {
	if jerr != nil || fields == nil {
		return searchErr(q, http.StatusBadRequest, "the search body must be a JSON object like {\"q\": \"word\", \"n\": 50}")
	}
	if s.idx == nil || !s.idx.Enabled() {
		return s.searchFail(q, idx.ErrOff)
	}
	n := s.srchHits
	if raw, ok := fields["n"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &n); err != nil || n < 1 {
			return searchErr(q, http.StatusBadRequest, "n must be a whole number of hits, at least 1")
		}
	}
	n = min(n, s.srchMax)
	var text *string
	if raw, ok := fields["q"]; ok {
		text = new(string)
		if err := json.Unmarshal(raw, text); err != nil {
			return searchErr(q, http.StatusBadRequest, "q must be a string")
		}
	}
	var hashes []string
	_, hashMode := fields["srch"]
	if hashMode && text == nil {
		if err := json.Unmarshal(fields["hash"], &hashes); err != nil || len(hashes) == 0 {
			return searchErr(q, http.StatusBadRequest, "hash search needs \"hash\": a list of up2k chunk hashes")
		}
		if len(hashes) > 4096 {
			return searchErr(q, http.StatusBadRequest, "hash search: at most 4096 hashes")
		}
	} else if text == nil {
		return searchErr(q, http.StatusBadRequest, "a search needs \"q\" (text search) or \"srch\" and \"hash\" (hash search)")
	}
	var vols []*store.Volume
	for _, v := range s.st.Volumes() {
		if v.Perms(q.user).Has(store.PermRead) {
			vols = append(vols, v)
		}
	}
	if len(vols) == 0 {
		if q.user == "" {
			return searchErr(q, http.StatusUnauthorized, "this needs a password (PW header, ?pw=, or basic auth)")
		}
		return searchErr(q, http.StatusForbidden, "user "+q.user+" may not read any volume")
	}
	now := time.Now()
	if err := s.idx.Limit.Allow(q.ip, now); err != nil {
		return s.searchFail(q, err)
	}
	ctx, cancel := context.WithTimeout(q.r.Context(), searchTimeout)
	defer cancel()
	var end time.Time
	res, err := func() (*idx.Result, error) {
		// Done whatever happens: a query Allow let through holds the
		// client's one slot until then.
		defer func() {
			end = time.Now()
			s.idx.Limit.Done(q.ip, end.Sub(now), end)
		}()
		if text != nil {
			return s.idx.Search(ctx, vols, *text, n)
		}
		return s.idx.HashSearch(ctx, vols, hashes, n)
	}()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && q.r.Context().Err() == nil {
			err = &store.Error{Kind: store.KindInternal, Msg: "the search took too long and was stopped; narrow it down", Err: err}
		}
		return s.searchFail(q, err)
	}
	qs := ""
	if text != nil {
		qs = *text
	}
	s.log.Debug("search", "id", q.id, "q", qs, "hashes", len(hashes), "hits", len(res.Hits), "plans", res.Plans, "dur", end.Sub(now))
	out := searchReply{Hits: make([]searchHit, 0, len(res.Hits)), TagOrder: []string{}, Trunc: res.Trunc}
	seen := map[string]bool{}
	for _, h := range res.Hits {
		tags := h.Tags
		if tags == nil {
			tags = map[string]string{}
		}
		for k := range tags {
			seen[k] = true
		}
		mt := h.Mtime / 1e9
		href := q.loc + hrefOf(h.Vol, h.Rel)
		// rp is copyparty's: the quoted URL path without its leading
		// slash, so that clients (u2c -s, the browser) can append it to
		// the server's address.
		out.Hits = append(out.Hits, searchHit{RP: href[1:], FN: h.Name(), SZ: h.Size, MT: mt, TS: mt, Tags: tags, Href: href})
	}
	for _, k := range tagOrder {
		if seen[k] {
			out.TagOrder = append(out.TagOrder, k)
		}
	}
	return writeJSON(q, http.StatusOK, out)
}

// hrefOf is the URL path of rel in v, each element escaped.
func hrefOf(v *store.Volume, rel string) string {
	p := path.Join(v.VPath, rel)
	var b strings.Builder
	b.Grow(len(p) + len(p)/4 + 1)
	for {
		b.WriteByte('/')
		e, rest, more := strings.Cut(p, "/")
		b.WriteString(url.PathEscape(e)) // no copy when nothing needs escaping
		if !more {
			return b.String()
		}
		p = rest
	}
}
