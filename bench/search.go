package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"hoard/up2k"
)

// query is one search form, in the interface's syntax and in copyparty's
// own (its q is a small expression language: name/path/size/date with
// like, =, <, >, and/or; sizes in MiB).
type query struct {
	form     string
	spec, cp string
	hash     bool // {"srch": true, "hash": [...]}: the same for both
}

func queries() []query {
	return []query{
		// the interface matches words against the whole path: in
		// copyparty's language, file name or folder path
		{form: "word", spec: "whale", cp: "( name like *whale* or path like *whale* )"},
		{form: "two words (AND)", spec: "blue whale", cp: "( name like *blue* or path like *blue* ) and ( name like *whale* or path like *whale* )"},
		{form: "quoted phrase", spec: `"blue whale"`, cp: `name like "*blue whale*"`},
		{form: "wildcard *.log", spec: "*.log", cp: "name like *.log"},
		{form: "size:>1M", spec: "size:>1M", cp: "size > 1"},
		{form: "date:<2020-06-01", spec: "date:<2020-06-01", cp: "date < 2020-06-01"},
		{form: "path:", spec: "path:" + fixDir + "/srch/river", cp: "path like " + fixDir + "/srch/river*"},
		{form: "ext:jpg,png", spec: "ext:jpg,png", cp: "name like *.jpg or name like *.png"},
		{form: "combined", spec: "whale ext:txt size:>10K", cp: "( name like *whale* or path like *whale* ) and name like *.txt and size > 0.01"},
		{form: "up2k hash (u2c -s)", hash: true},
	}
}

type searchReply struct {
	Hits  []json.RawMessage `json:"hits"`
	Trunc bool              `json:"trunc"`
	Error string            `json:"error"`
}

// doSearch posts one search and returns the number of hits; rateLimited
// is set on 429.
func (e *env) doSearch(ctx context.Context, body []byte) (hits int, status int, err error) {
	// copyparty takes a JSON POST for a text search only with ?srch in
	// the URL (else it is an up2k handshake); the interface and hoard
	// accept that form too
	u := e.t.url + "/?srch"
	if bytes.Contains(body, []byte(`"srch":true`)) {
		u = e.t.url + "/"
	}
	req, err := http.NewRequestWithContext(ctx, "POST", u, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.t.client().Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, resp.StatusCode, err
	}
	if resp.StatusCode != 200 {
		return 0, resp.StatusCode, fmt.Errorf("search %s: %s: %s", body, resp.Status, clipBytes(b))
	}
	var r searchReply
	if err := json.Unmarshal(b, &r); err != nil || r.Hits == nil {
		return 0, resp.StatusCode, fmt.Errorf("search %s: 200 but no hits list: %s", body, clipBytes(b))
	}
	return len(r.Hits), 200, nil
}

// clipBytes is a server's answer fit for one line of a report.
func clipBytes(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func qbody(q string) []byte {
	b, _ := json.Marshal(map[string]any{"q": q, "n": 100})
	return b
}

// dialect finds out which query language the target speaks (and whether it
// searches at all), waiting up to a minute for a first index scan.
func (e *env) dialect() (string, error) {
	if d, ok := e.state["dialect"].(string); ok {
		return d, nil
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		// copyparty's form first: in the interface's syntax it is three
		// words that match nothing, while copyparty reads a bare word as
		// a tag name and may answer anything
		n2, st2, err2 := e.doSearch(e.ctx, qbody("name like *whale*"))
		if err2 == nil && n2 > 0 {
			e.state["dialect"] = "copyparty"
			return "copyparty", nil
		}
		n, st, err := e.doSearch(e.ctx, qbody("whale"))
		if err == nil && n > 0 {
			e.state["dialect"] = "spec"
			return "spec", nil
		}
		busy := st == 503 || st2 == 503 || st == 429 || st2 == 429 || (err == nil && n == 0) || (err2 == nil && n2 == 0)
		if !busy || time.Now().After(deadline) || e.ctx.Err() != nil {
			if e.ctx.Err() != nil {
				return "", e.ctx.Err()
			}
			if err == nil && n == 0 || err2 == nil && n2 == 0 {
				return "", fmt.Errorf("search works but finds none of the %d corpus files after 60 s (not indexed? copyparty: start it after -prepare, with -e2dsa)", e.c.searchN)
			}
			why := err
			if err == nil {
				why = err2
			}
			return "", unsupportedf("%v", why)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// search runs each query form one at a time for an equal share of
// -duration and reports its latency percentiles. A 429 (copyparty's rate
// limit after a query slower than 0.7 s) waits the penalty out and is
// counted, not timed.
func search(e *env) ([]figure, error) {
	d, err := e.dialect()
	if err != nil {
		return nil, err
	}
	small := make([]byte, e.c.smallSize)
	if b, err := os.ReadFile(e.fx.dir + "/" + e.fx.smallPath(0)); err == nil {
		small = b
	}
	// u2c -s: the file's chunk hashes and size (copyparty needs the size,
	// it matches whole files by wark)
	hashBody, _ := json.Marshal(map[string]any{"srch": true, "hash": []string{up2k.ChunkHash(small)}, "size": len(small), "name": "s00000.bin"})
	qs := queries()
	per := e.c.duration / time.Duration(len(qs))
	var figs []figure
	limited := 0
	for _, q := range qs {
		body := hashBody
		if !q.hash {
			if d == "spec" {
				body = qbody(q.spec)
			} else {
				body = qbody(q.cp)
			}
		}
		one := *e.c
		one.duration = per
		e1 := *e
		e1.c = &one
		hits := -1
		st, err := load(&e1, 1, false, func(ctx context.Context, w, i int, moved *atomic.Int64) error {
			for {
				n, status, err := e.doSearch(ctx, body)
				if status == 429 {
					limited++
					time.Sleep(750 * time.Millisecond)
					continue
				}
				if err != nil {
					return err
				}
				hits = n
				return nil
			}
		})
		if err != nil {
			return nil, err
		}
		name := q.form
		figs = append(figs,
			figure{Name: name + " hits (n=100)", Unit: "hits", Value: float64(hits)},
			figure{Name: name + " p50", Unit: "ms", Value: st.pct(50), Lower: true},
			figure{Name: name + " p95", Unit: "ms", Value: st.pct(95), Lower: true},
			figure{Name: name + " p99", Unit: "ms", Value: st.pct(99), Lower: true},
		)
	}
	figs = append(figs, figure{Name: "rate-limited answers (429)", Unit: "count", Value: float64(limited), Lower: true})
	return figs, nil
}

// readDirNames lists a folder's regular files (not dotfiles).
func readDirNames(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	var out []string
	for _, d := range ents {
		if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
			out = append(out, d.Name())
		}
	}
	return out, err
}
