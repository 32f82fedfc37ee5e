package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// deleteBatch is the most paths sent in one POST /?delete (the server
// takes a 1 MiB body; a batch that is still too big is halved).
const deleteBatch = 500

// deleteRemote is --dr's second pass: for every local folder of a folder
// target it lists the remote folder and deletes what is not there
// locally (files, and folders with all inside). Names left out by the
// filters count as present: a filter never deletes anything.
func (r *run) deleteRemote(ctx context.Context) error {
	var batch []string
	flush := func() error {
		for len(batch) > 0 {
			n, err := r.deletePaths(ctx, batch)
			if err != nil {
				return err
			}
			batch = batch[n:]
		}
		return nil
	}
	var visit func(local, rel string) error
	visit = func(local, rel string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		ents, err := os.ReadDir(local)
		if err != nil {
			return fmt.Errorf("--dr: cannot read %s, so nothing below it is deleted: %w", local, err)
		}
		remote := r.folder
		if rel != "" {
			remote += rel + "/"
		}
		names, err := r.listRemote(ctx, remote)
		if err != nil {
			return err
		}
		have := make(map[string]bool, len(ents))
		for _, e := range ents {
			have[e.Name()] = true
		}
		for _, n := range names {
			if have[n] || n == ".hist" {
				continue
			}
			p := remote + n
			if r.o.DryRun {
				r.deleted(p, true)
				continue
			}
			batch = append(batch, p)
			if len(batch) >= deleteBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		for _, e := range ents {
			if !e.IsDir() { // symlinks to folders are not followed
				continue
			}
			sub := path.Join(rel, e.Name())
			abs := filepath.Join(local, e.Name())
			// A folder the filters leave out is kept whole remotely.
			if r.o.Filter.skip(abs, sub, true) {
				continue
			}
			if err := visit(abs, sub); err != nil {
				return err
			}
		}
		return nil
	}
	for _, t := range r.o.Targets {
		if !t.Dir {
			continue
		}
		if err := visit(t.Local, t.Remote); err != nil {
			return err
		}
	}
	return flush()
}

func (r *run) deleted(p string, dry bool) {
	r.mu.Lock()
	if !dry {
		r.sum.Deleted++
	}
	r.mu.Unlock()
	switch {
	case r.o.JSON && dry:
		r.emit(event{Event: "delete", URL: p, Status: "dry-run"})
	case r.o.JSON:
		r.emit(event{Event: "delete", URL: p})
	case dry:
		r.line(false, "would delete: %s", clean(p))
	default:
		r.say("deleted: %s", clean(p))
	}
}

// deletePaths deletes up to all of paths in one request and returns how
// many it covered.
func (r *run) deletePaths(ctx context.Context, paths []string) (int, error) {
	n := len(paths)
	for {
		body, err := json.Marshal(paths[:n])
		if err != nil {
			return 0, err
		}
		_, err = r.w.do(ctx, func() (*http.Request, error) {
			q, err := http.NewRequest(http.MethodPost, r.w.base+escapePath(r.folder)+"?delete", strings.NewReader(string(body)))
			if err == nil {
				q.Header.Set("Content-Type", "application/json")
			}
			return q, err
		}, false)
		if he, ok := isHTTP(err, http.StatusRequestEntityTooLarge); ok && n > 1 {
			_ = he
			n /= 2
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("--dr: deleting %d remote paths: %w", n, err)
		}
		for _, p := range paths[:n] {
			r.deleted(p, false)
		}
		return n, nil
	}
}

// listRemote returns the names in a remote folder (nil when it does not
// exist).
func (r *run) listRemote(ctx context.Context, folder string) ([]string, error) {
	body, _, err := r.w.doLimit(ctx, func() (*http.Request, error) {
		return http.NewRequest(http.MethodGet, r.w.base+escapePath(folder)+"?ls", nil)
	}, false, maxListing)
	if _, ok := isHTTP(err, http.StatusNotFound); ok {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--dr: listing %s: %w", folder, err)
	}
	return parseListing(body)
}

// parseListing reads the names of a ?ls reply: each entry's href, its
// query and trailing slash cut, unescaped; an entry that is not a plain
// name is an error (nothing is deleted on a reply not understood).
func parseListing(body []byte) ([]string, error) {
	var ls struct {
		Dirs  []struct{ Href string } `json:"dirs"`
		Files []struct{ Href string } `json:"files"`
	}
	if err := json.Unmarshal(body, &ls); err != nil {
		return nil, fmt.Errorf("--dr: the folder listing is not the JSON expected: %v", err)
	}
	var out []string
	for _, e := range append(ls.Dirs, ls.Files...) {
		h, _, _ := strings.Cut(e.Href, "?")
		h = strings.TrimSuffix(h, "/")
		n, err := url.PathUnescape(h)
		if err != nil || n == "" || n == "." || n == ".." || strings.ContainsAny(n, "/\\\x00") {
			return nil, errors.New("--dr: the folder listing has an entry " + fmt.Sprintf("%q", e.Href) + " that is not a name")
		}
		out = append(out, n)
	}
	return out, nil
}
