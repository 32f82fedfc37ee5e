package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Events. With --json every line on Stdout is one JSON object with an
// "event" key:
//
//	{"event":"file","path":"a/b.txt","size":5,"status":"uploaded","url":"/up/a/b.txt"}
//	    status: uploaded | present | skipped | failed (with "error") |
//	    found (with "hits") | notfound | dry-run | stopped (in flight when
//	    the run stopped: the summary's "error" says why)
//	{"event":"delete","url":"/up/a/gone.txt"}
//	{"event":"progress","files":3,"files_total":9,"bytes":…,"bytes_total":…,"sent":…,"rate":…,"eta":…,"errors":0}
//	{"event":"summary", …Summary…, "ok":true}
//
// Without --json, failures and a progress line go to Stderr (live on a
// terminal, every Every otherwise), search hits and dry-run lists to
// Stdout, and a summary ends the run.
type event struct {
	Event  string   `json:"event"`
	Path   string   `json:"path,omitempty"`
	Size   *int64   `json:"size,omitempty"`
	Status string   `json:"status,omitempty"`
	URL    string   `json:"url,omitempty"`
	Error  string   `json:"error,omitempty"`
	Hits   []string `json:"hits,omitempty"`
}

func (r *run) emit(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	r.out.Lock()
	defer r.out.Unlock()
	r.clearLine()
	r.o.Stdout.Write(append(b, '\n'))
}

// line writes one human line to w (Stdout or Stderr), above the live line.
func (r *run) line(toErr bool, format string, args ...any) {
	r.out.Lock()
	defer r.out.Unlock()
	r.clearLine()
	w := r.o.Stdout
	if toErr {
		w = r.o.Stderr
	}
	fmt.Fprintf(w, format+"\n", args...)
}

// say is a human note on Stderr (not in --json mode).
func (r *run) say(format string, args ...any) {
	if r.o.JSON {
		return
	}
	r.line(true, format, args...)
}

func (r *run) clearLine() {
	if r.o.Live && !r.o.JSON && r.liveShown {
		fmt.Fprint(r.o.Stderr, "\r\033[K")
		r.liveShown = false
	}
}

func (r *run) done(size int64, sent int64) {
	r.st.filesDone.Add(1)
	r.st.bytesDone.Add(max(0, size-sent))
}

// failIt records a file in flight that did not make it.
func (r *run) failIt(it *item, err error) { r.failSent(it.rel, it.size, it.sent.Load(), err) }

// fail records a file that did not make it.
func (r *run) fail(rel string, size int64, err error) { r.failSent(rel, size, 0, err) }

// failSent records a file that did not make it after sent of its bytes
// were counted done.
func (r *run) failSent(rel string, size, sent int64, err error) {
	r.done(size, sent)
	if serverSide(err) {
		r.serverFailed(err)
	}
	if errors.Is(err, context.Canceled) && r.ctx.Err() != nil {
		// The run stopped (its cause is said once, at the end): this
		// file was only in flight.
		r.mu.Lock()
		r.sum.Stopped++
		r.mu.Unlock()
		if r.o.JSON {
			r.emit(event{Event: "file", Path: rel, Size: &size, Status: "stopped"})
		}
		return
	}
	r.st.errors.Add(1)
	msg := err.Error()
	r.mu.Lock()
	r.sum.Files++
	r.sum.Failed++
	r.sum.Bytes += size
	if len(r.sum.Failures) < maxFailures {
		r.sum.Failures = append(r.sum.Failures, Failure{Path: rel, Err: msg})
	}
	r.lastErr = clean(rel + ": " + msg)
	r.mu.Unlock()
	if r.o.JSON {
		r.emit(event{Event: "file", Path: rel, Size: &size, Status: "failed", Error: msg})
		return
	}
	r.line(true, "failed: %s: %s", clean(rel), clean(msg))
}

// finish records a file done: uploaded, present or skipped.
func (r *run) finish(it *item, status, where string) {
	sent := it.sent.Load()
	r.done(it.size, sent)
	r.mu.Lock()
	r.serverFails = 0
	r.sum.Files++
	r.sum.Bytes += it.size
	switch status {
	case "uploaded":
		r.sum.Uploaded++
	case "present":
		r.sum.Present++
	case "skipped":
		r.sum.Skipped++
	}
	r.mu.Unlock()
	if r.o.JSON {
		ev := event{Event: "file", Path: it.rel, Size: &it.size, Status: status}
		if status == "skipped" {
			ev.Error = where
		} else {
			ev.URL = where
		}
		r.emit(ev)
	}
}

// found records a search result.
func (r *run) found(it *item, hits []string) {
	r.done(it.size, 0)
	r.mu.Lock()
	r.serverFails = 0
	r.sum.Files++
	r.sum.Bytes += it.size
	if len(hits) > 0 {
		r.sum.Found++
	} else {
		r.sum.NotFound++
	}
	r.mu.Unlock()
	switch {
	case r.o.JSON && len(hits) > 0:
		r.emit(event{Event: "file", Path: it.rel, Size: &it.size, Status: "found", Hits: hits})
	case r.o.JSON:
		r.emit(event{Event: "file", Path: it.rel, Size: &it.size, Status: "notfound"})
	case len(hits) > 0:
		r.line(false, "found: %s\t%s", clean(it.rel), strings.Join(hits, " "))
	default:
		r.line(false, "not found: %s", clean(it.rel))
	}
}

func (r *run) retried(err error) {
	r.st.retries.Add(1)
	r.mu.Lock()
	r.lastErr = clean("retrying: " + err.Error())
	r.mu.Unlock()
}

// count walks the targets once more, only counting, so that the progress
// display knows the totals early.
func (r *run) count(ctx context.Context) {
	defer r.st.countDone.Store(true)
	for _, t := range r.o.Targets {
		if !t.Dir {
			if fi, err := os.Stat(t.Local); err == nil {
				r.st.filesTotal.Add(1)
				r.st.bytesTotal.Add(fi.Size())
			}
			continue
		}
		filepath.WalkDir(t.Local, func(p string, d fs.DirEntry, err error) error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil || p == t.Local {
				return nil
			}
			rel, _ := filepath.Rel(t.Local, p)
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				if r.o.Filter.skip(p, rel, true) {
					return fs.SkipDir
				}
				return nil
			}
			if r.o.Filter.skip(p, rel, false) {
				return nil
			}
			fi, err := os.Stat(p)
			if err == nil && fi.Mode().IsRegular() {
				r.st.filesTotal.Add(1)
				r.st.bytesTotal.Add(fi.Size())
			}
			return nil
		})
	}
}

// progress shows progress until the returned stop is called.
func (r *run) progress(ctx context.Context, t0 time.Time) (stop func()) {
	every := r.o.Every
	if r.o.Live && !r.o.JSON {
		every = 250 * time.Millisecond
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-tk.C:
				r.tick(t0)
			}
		}
	})
	return func() {
		close(quit)
		wg.Wait()
		r.out.Lock()
		r.clearLine()
		r.out.Unlock()
	}
}

type snapshot struct {
	Event      string  `json:"event"`
	Files      int64   `json:"files"`
	FilesTotal int64   `json:"files_total"`
	Bytes      int64   `json:"bytes"`
	BytesTotal int64   `json:"bytes_total"`
	Sent       int64   `json:"sent"`
	Hashed     int64   `json:"hashed"`        // bytes hashed (ahead of what is sent)
	Rate       float64 `json:"rate"`          // bytes per second, all bytes handled
	ETA        float64 `json:"eta,omitempty"` // seconds, once the totals are known
	Errors     int64   `json:"errors"`
	Retries    int64   `json:"retries"`
	counted    bool
}

func (r *run) snap(t0 time.Time) snapshot {
	s := snapshot{Event: "progress", Files: r.st.filesDone.Load(), FilesTotal: r.st.filesTotal.Load(),
		Bytes: r.st.bytesDone.Load(), BytesTotal: r.st.bytesTotal.Load(), Sent: r.st.sent.Load(), Hashed: r.st.hashedBytes.Load(),
		Errors: r.st.errors.Load(), Retries: r.st.retries.Load(), counted: r.st.countDone.Load()}
	if el := time.Since(t0).Seconds(); el > 0 {
		s.Rate = float64(s.Bytes) / el
	}
	if s.counted && s.Rate > 0 && s.BytesTotal > s.Bytes {
		s.ETA = float64(s.BytesTotal-s.Bytes) / s.Rate
	}
	// Many small files go at a rate of files, not bytes: the later of
	// the two estimates.
	if el := time.Since(t0).Seconds(); s.counted && s.Files > 0 && s.FilesTotal > s.Files && el > 0 {
		s.ETA = max(s.ETA, float64(s.FilesTotal-s.Files)/(float64(s.Files)/el))
	}
	return s
}

func (r *run) tick(t0 time.Time) {
	s := r.snap(t0)
	if r.o.JSON {
		r.emit(s)
		return
	}
	plus := ""
	if !s.counted {
		plus = "+"
	}
	txt := fmt.Sprintf("%d/%d%s files  %s/%s%s  %s/s", s.Files, s.FilesTotal, plus, human(s.Bytes), human(s.BytesTotal), plus, human(int64(s.Rate)))
	if s.ETA > 0 {
		txt += "  ETA " + (time.Duration(s.ETA) * time.Second).String()
	}
	if s.Hashed > s.Bytes && s.Hashed < s.BytesTotal {
		txt += "  (hashed " + human(s.Hashed) + ")"
	}
	if s.Errors > 0 || s.Retries > 0 {
		r.mu.Lock()
		last := r.lastErr
		r.mu.Unlock()
		txt += fmt.Sprintf("  %d failed, %d retries", s.Errors, s.Retries)
		if last != "" {
			txt += " (" + last + ")"
		}
	}
	r.out.Lock()
	defer r.out.Unlock()
	if r.o.Live {
		if len(txt) > 150 {
			txt = txt[:150] + "…"
		}
		fmt.Fprint(r.o.Stderr, "\r\033[K"+txt)
		r.liveShown = true
		return
	}
	fmt.Fprintln(r.o.Stderr, txt)
}

// final prints the summary.
func (r *run) final(runErr error) {
	s := &r.sum
	if r.o.JSON {
		out := struct {
			Event string `json:"event"`
			*Summary
			OK    bool   `json:"ok"`
			Error string `json:"error,omitempty"`
		}{Event: "summary", Summary: s, OK: runErr == nil && s.Failed == 0}
		if runErr != nil {
			out.Error = runErr.Error()
		}
		r.emit(out)
		return
	}
	rate := 0.0
	if s.Seconds > 0 {
		rate = float64(s.Bytes) / s.Seconds
	}
	switch {
	case r.o.Search:
		r.line(true, "searched %d files (%s) in %.1f s: %d found, %d not found, %d failed", s.Files, human(s.Bytes), s.Seconds, s.Found, s.NotFound, s.Failed)
	case r.o.DryRun:
		r.line(true, "dry run: %d files (%s) would be sent", s.Files, human(s.Bytes))
	default:
		r.line(true, "%d files (%s) in %.1f s, %s/s: %d uploaded (%s sent), %d already there, %d skipped, %d failed", s.Files, human(s.Bytes), s.Seconds, human(int64(rate)), s.Uploaded, human(s.Sent), s.Present, s.Skipped, s.Failed)
	}
	if s.Deleted > 0 {
		r.line(true, "deleted %d remote files or folders", s.Deleted)
	}
	if s.Stopped > 0 {
		were := "files were"
		if s.Stopped == 1 {
			were = "file was"
		}
		r.line(true, "%d %s in flight when the run stopped (run it again to resume)", s.Stopped, were)
	}
	if s.Failed > 0 {
		r.line(true, "these %d files failed:", s.Failed)
		for _, f := range s.Failures {
			r.line(true, "  %s: %s", clean(f.Path), clean(f.Err))
		}
		if n := s.Failed - int64(len(s.Failures)); n > 0 {
			r.line(true, "  … and %d more", n)
		}
	}
	if runErr != nil {
		r.line(true, "hoard up: %v", runErr)
	}
}

func human(n int64) string {
	const u = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n)/1024, 0
	for f >= 1024 && i < len(u)-1 {
		f /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", f, u[i])
}

// dryRun walks and lists what would be sent.
func (r *run) dryRun(ctx context.Context) {
	files := make(chan *local, 256)
	go func() {
		defer close(files)
		walk(ctx, r.o.Targets, &r.o.Filter, files, func(rel string, err error) { r.fail(rel, 0, err) })
	}()
	for l := range files {
		r.done(l.size, 0)
		r.mu.Lock()
		r.sum.Files++
		r.sum.Bytes += l.size
		r.mu.Unlock()
		url := r.folder + l.rel
		if r.o.JSON {
			r.emit(event{Event: "file", Path: l.rel, Size: &l.size, Status: "dry-run", URL: url})
		} else {
			r.line(false, "would send: %s (%s) to %s", clean(l.rel), human(l.size), clean(url))
		}
	}
}

// maxServerFails is how many files in a row may fail by the server's
// fault (5xx after the retries, or no connection) before the run stops:
// with nothing getting through, the rest would only fail the same way,
// each after its retries. Twice the handshakes in flight by default, so
// that one wave of files that were already under way does not decide.
const maxServerFails = 64

// serverSide reports whether err is the server's or the network's, not
// the file's: a 5xx (after the retries) or a request that got no answer.
func serverSide(err error) bool {
	if he, ok := isHTTP(err, 0); ok {
		return he.Status >= 500
	}
	var ue *url.Error
	return errors.As(err, &ue) && !errors.Is(err, context.Canceled)
}

// serverFailed counts a file failed by the server; maxServerFails in a
// row, with no file done between them, stop the run.
func (r *run) serverFailed(err error) {
	r.mu.Lock()
	r.serverFails++
	stop := r.serverFails == maxServerFails
	r.mu.Unlock()
	if stop {
		r.cancel(fmt.Errorf("the last %d files failed on the server's side, none got through (the last: %w); stopping: run it again once the server is fixed", maxServerFails, err))
	}
}
