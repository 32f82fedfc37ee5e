// Package client is the client half of the up2k protocol: the bulk
// uploader behind `hoard up`. It walks files and folders as a stream,
// hashes chunks on all cores (through the SHA-512 lanes when the CPU has
// them), handshakes many files at once, sends the needed chunks over a
// fixed number of connections (stitching consecutive chunks of a file
// into one POST), confirms each file with a final handshake (unless the
// post that completed it said so: up2k.DoneHeader, hoard's), and resumes
// by running again: the handshake says what the server still needs.
//
// Memory is bounded whatever the tree: the walk holds one folder's names
// at a time, and bounded queues keep a few hundred files in flight.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"hoard/up2k"
)

// Options configure a run.
type Options struct {
	URL          string // http(s)://host[:port]/folder/
	Targets      []Target
	Password     string
	Jobs         int   // connections sending chunks (-j)
	Handshakes   int   // files handshaking or uploading at once
	PostSize     int64 // stitch consecutive chunks into posts of about this many bytes (--sz)
	Overwrite    bool  // --ow: replace a different file of the same name
	Touch        bool  // --touch: update the server's mtime of identical files
	Search       bool  // -s: search for the files, upload nothing
	DryRun       bool  // --dry-run: walk (and list remote folders for --dr), change nothing
	DeleteRemote bool  // --dr: delete remote files not present locally
	Filter       Filter
	Insecure     bool          // -td
	CACert       string        // --cacert / -te
	Retries      int           // tries after the first, per request
	JSON         bool          // one JSON object per event on Stdout
	Live         bool          // a live progress line on Stderr (a terminal)
	Every        time.Duration // period of plain progress lines when not Live
	Stdout       io.Writer
	Stderr       io.Writer
}

// A Failure is one file that did not make it.
type Failure struct {
	Path string `json:"path"`
	Err  string `json:"error"`
}

// Summary is the outcome of a run.
type Summary struct {
	Files    int64     `json:"files"`    // files handled
	Uploaded int64     `json:"uploaded"` // sent (some or all of their chunks)
	Present  int64     `json:"present"`  // already on the server: one handshake
	Skipped  int64     `json:"skipped"`  // refused as already there (409)
	Failed   int64     `json:"failed"`
	Stopped  int64     `json:"stopped,omitempty"`  // in flight when the run stopped (a fatal error, an interrupt): not failed, not done
	Found    int64     `json:"found,omitempty"`    // -s
	NotFound int64     `json:"notfound,omitempty"` // -s
	Bytes    int64     `json:"bytes"`              // size of the files handled
	Sent     int64     `json:"sent"`               // chunk bytes acknowledged by the server
	Deleted  int64     `json:"deleted,omitempty"`  // --dr
	Seconds  float64   `json:"seconds"`
	Failures []Failure `json:"failures,omitempty"` // the first maxFailures
}

const maxFailures = 1000

// ParseURL checks a target URL and returns its base (scheme://host) and
// folder path (with slashes at both ends).
func ParseURL(s string) (base, folder string, err error) {
	if !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
		return "", "", fmt.Errorf("URL %q: want http://HOST[:PORT]/FOLDER/ or https://…", s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", "", fmt.Errorf("URL %q: %v", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", "", fmt.Errorf("URL %q: want http://HOST[:PORT]/FOLDER/ or https://…", s)
	}
	if u.Host == "" || u.Hostname() == "" {
		return "", "", fmt.Errorf("URL %q has no host", s)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", "", fmt.Errorf("URL %q: give the folder only, no query, fragment or user (use -a for the password)", s)
	}
	folder = "/" + strings.Trim(u.Path, "/") + "/"
	if folder == "//" {
		folder = "/"
	}
	for _, seg := range strings.Split(strings.Trim(folder, "/"), "/") {
		if seg == ".." || seg == "." {
			return "", "", fmt.Errorf("URL %q: no . or .. in the folder path", s)
		}
	}
	return u.Scheme + "://" + u.Host, folder, nil
}

// run is one upload run's shared state.
type run struct {
	o      *Options
	w      *wire
	folder string // URL path of the target folder, /…/
	h      *hasher
	posts  chan *post
	ctx    context.Context // the run's; cancelled with the cause that stops it
	cancel context.CancelCauseFunc

	st          stats
	mu          sync.Mutex
	sum         Summary
	lastErr     string
	serverFails int        // files failed by the server in a row (serverFailed); guarded by mu
	out         sync.Mutex // Stdout/Stderr lines
	liveShown   bool       // the live line is on the terminal; guarded by out

	oneShot atomic.Bool  // the server takes one-shot posts (up2k.OneShotHeader)
	fresh   atomic.Int64 // how new files are to the server lately (note)
}

// stats are the live counters the progress display reads.
type stats struct {
	filesTotal, bytesTotal atomic.Int64 // found by the counting walk
	countDone              atomic.Bool
	filesDone, bytesDone   atomic.Int64
	sent                   atomic.Int64
	errors                 atomic.Int64
	retries                atomic.Int64
	hashed                 atomic.Int64
	hashedBytes            atomic.Int64
}

// Run uploads (or searches, or lists) the targets. Its error is for the
// run as a whole (a bad password, a canceled context); files that fail
// are counted and listed in the Summary.
func Run(ctx context.Context, o Options) (*Summary, error) {
	base, folder, err := ParseURL(o.URL)
	if err != nil {
		return nil, err
	}
	if o.Jobs < 1 {
		o.Jobs = 8
	}
	if o.Handshakes < 1 {
		o.Handshakes = max(16, 4*o.Jobs)
	}
	if o.PostSize <= 0 {
		o.PostSize = 64 << 20
	}
	if o.Every <= 0 {
		o.Every = 10 * time.Second
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.DeleteRemote {
		o.Overwrite = true // as u2c: the local file wins
	}
	tr, err := newTransport(&o, o.Handshakes+o.Jobs+4)
	if err != nil {
		return nil, err
	}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r := &run{o: &o, folder: folder, ctx: ctx, cancel: cancel}
	r.w = &wire{base: base, pw: o.Password, hc: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, retries: o.Retries, onRetry: r.retried}
	t0 := time.Now()

	go r.count(ctx)
	stopProgress := r.progress(ctx, t0)
	if o.DryRun {
		r.dryRun(ctx)
	} else {
		r.pipeline(ctx)
	}
	var runErr error
	if c := context.Cause(ctx); c != nil {
		runErr = c
		if errors.Is(c, context.Canceled) {
			runErr = errors.New("interrupted; run it again to resume")
		}
	}
	if runErr == nil && o.DeleteRemote && !o.Search {
		if r.sum.Failed > 0 {
			r.say("not deleting remote files: %d files failed to upload", r.sum.Failed)
		} else {
			runErr = r.deleteRemote(ctx)
		}
	}
	stopProgress()
	r.sum.Seconds = time.Since(t0).Seconds()
	r.sum.Sent = r.st.sent.Load()
	r.final(runErr)
	return &r.sum, runErr
}

// pipeline: walk → hash (all cores) → handshakes and chunk posts.
func (r *run) pipeline(ctx context.Context) {
	r.h = newHasher(runtime.GOMAXPROCS(0))
	r.h.done = func(n int64) { r.st.hashedBytes.Add(n) }
	defer r.h.close()
	files := make(chan *local, 256)
	hashed := make(chan *item, 64)
	r.posts = make(chan *post)
	go func() {
		defer close(files)
		walk(ctx, r.o.Targets, &r.o.Filter, files, func(rel string, err error) { r.fail(rel, 0, err) })
	}()

	hashers := 2 * runtime.GOMAXPROCS(0)
	if r.h.lanes != nil {
		hashers = max(hashers, 16)
	}
	var hw sync.WaitGroup
	for range hashers {
		hw.Go(func() {
			for l := range files {
				if ctx.Err() != nil {
					continue // the run is over (a bad password, a signal)
				}
				it, err := r.open(ctx, l)
				for try := 0; try < 3 && errors.Is(err, errChanged); try++ {
					it, err = r.open(ctx, l) // it changed while hashed: again
				}
				if err != nil {
					r.fail(l.rel, l.size, err)
					continue
				}
				if !send(ctx, hashed, it) {
					it.close()
				}
			}
		})
	}
	go func() { hw.Wait(); close(hashed) }()

	var pw sync.WaitGroup
	if !r.o.Search {
		for range r.o.Jobs {
			pw.Go(func() {
				for p := range r.posts {
					p.done <- r.send(ctx, p)
				}
			})
		}
	}
	var dw sync.WaitGroup
	for range r.o.Handshakes {
		dw.Go(func() {
			for it := range hashed {
				if ctx.Err() != nil {
					it.close()
					continue
				}
				if r.o.Search {
					r.search(ctx, it)
				} else {
					r.drive(ctx, it)
				}
				it.close()
			}
		})
	}
	dw.Wait()
	close(r.posts)
	pw.Wait()
	for range files { // after a cancel, let the walk end
	}
}

// item is a file in flight: open, hashed.
type item struct {
	*local
	f      *os.File
	hashes []string
	sent   atomic.Int64 // its chunk bytes acknowledged
	owned  string       // the name of the upload this run started, if any
	purl   string       // and its folder (as the server gave it)
	redo   bool         // hashed again after a change: replace what we started (owned)
}

func (it *item) close() {
	if it.f != nil {
		it.f.Close()
		it.f = nil
	}
}

// open opens and hashes a file, taking its size and time from the open
// file (so that they describe what is hashed).
func (r *run) open(ctx context.Context, l *local) (*item, error) {
	f, err := os.Open(l.abs)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, errIrregular
	}
	if d := fi.Size() - l.size; d != 0 {
		r.st.bytesTotal.Add(d)
	}
	l.size, l.mtime, l.mtimeN = fi.Size(), fi.ModTime().Unix(), fi.ModTime().UnixNano()
	hs, err := r.h.hashFile(ctx, f, l.size)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.st.hashed.Add(1)
	return &item{local: l, f: f, hashes: hs}, nil
}

// changed reports whether the file at it's path is not what was hashed.
func (it *item) changed() bool {
	a, err := it.f.Stat()
	if err != nil {
		return true
	}
	b, err := os.Stat(it.abs)
	if err != nil {
		return true
	}
	return !os.SameFile(a, b) || a.Size() != it.size || a.ModTime().UnixNano() != it.mtimeN || b.ModTime().UnixNano() != it.mtimeN
}

// rehash opens the file again and hashes it anew.
func (r *run) rehash(ctx context.Context, it *item) error {
	it.close()
	n, err := r.open(ctx, it.local) // it moves the total by any change of size
	if err != nil {
		return err
	}
	it.f, it.hashes = n.f, n.hashes
	return nil
}

// folderURL is the URL path of a file's remote folder.
func (r *run) folderURL(it *item) string {
	if it.rdir == "" {
		return r.folder
	}
	return r.folder + it.rdir + "/"
}

// handshake posts the file's hashes; srch asks for a search instead.
func (r *run) handshake(ctx context.Context, it *item, srch bool) ([]byte, error) {
	body, target, err := r.hsRequest(it, srch)
	if err != nil {
		return nil, err
	}
	reply, hdr, err := r.w.doH(ctx, func() (*http.Request, error) {
		q, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
		if err == nil {
			q.Header.Set("Content-Type", "application/json")
		}
		return q, err
	}, true)
	if err == nil && !srch && hdr.Get(up2k.OneShotHeader) == "1" {
		r.oneShot.Store(true)
	}
	return reply, err
}

// hsRequest is the JSON of its handshake and the URL it goes to.
func (r *run) hsRequest(it *item, srch bool) (body []byte, target string, err error) {
	name := it.name
	if it.owned != "" {
		// The name the server gave this upload (a collision rename): the
		// same content asked for under the first name would be another
		// file, a duplicate at yet another name.
		name = it.owned
	}
	req := map[string]any{"name": name, "size": it.size, "lmod": it.mtime, "hash": it.hashes}
	if srch {
		req["srch"] = 1
	} else {
		if r.o.Overwrite || it.redo && it.owned != "" {
			req["replace"] = true
		}
		if r.o.Touch {
			req["umod"] = true
		}
	}
	if body, err = json.Marshal(req); err != nil {
		return nil, "", err
	}
	folder := r.folderURL(it)
	if it.owned != "" && it.purl != "" {
		folder = it.purl // where the server put it (a hook may move it)
	}
	return body, r.w.base + escapePath(folder), nil
}

// One-shot posts (up2k.OneShotHeader) carry a small file's handshake and
// bytes in one request: half the requests for a tree of small files. The
// bytes go before the client knows whether the server needs them, so
// they are used only while the server lately needed the files it was
// asked about (a re-run over files already there costs a handshake
// each, not their bytes): fresh goes up by one for a file the server
// needed and down by oneShotHad for one it had, between ±oneShotCap,
// and one-shot posts are made while it is at least oneShotFrom. A run
// starts with plain handshakes (they also tell whether the server takes
// one-shot posts).
const (
	oneShotFrom = 8
	oneShotHad  = 4
	oneShotCap  = 32
)

// note counts a file the server needed (fresh) or had.
func (r *run) note(fresh bool) {
	for {
		old := r.fresh.Load()
		n := old + 1
		if !fresh {
			n = old - oneShotHad
		}
		n = max(-oneShotCap, min(oneShotCap, n))
		if r.fresh.CompareAndSwap(old, n) {
			return
		}
	}
}

// wantOneShot reports whether it goes as a one-shot post.
func (r *run) wantOneShot(it *item) bool {
	return r.oneShot.Load() && r.fresh.Load() >= oneShotFrom && !r.o.Overwrite && !r.o.Touch &&
		len(it.hashes) == 1 && it.size > 0 && it.size <= up2k.OneShotMax && it.owned == "" && !it.redo
}

// postOneShot sends it whole with its handshake; the reply is the
// handshake's, as it stands after the server took the bytes, and its
// header (up2k.DoneHeader when this post published the file).
func (r *run) postOneShot(ctx context.Context, it *item) (reply, http.Header, error) {
	hs, target, err := r.hsRequest(it, false)
	if err != nil {
		return reply{}, nil, err
	}
	enc := b64.EncodeToString(hs)
	tries := 0
	body, hdr, err := r.w.doH(ctx, func() (*http.Request, error) {
		if tries++; tries > 1 && it.changed() {
			return nil, errChanged
		}
		q, err := http.NewRequest(http.MethodPost, target, chunkBody(it.f, 0, it.size))
		if err != nil {
			return nil, err
		}
		q.ContentLength = it.size
		q.Header.Set("Content-Type", "application/octet-stream")
		q.Header.Set("X-Up2k-Hash", it.hashes[0]) // the chunk it carries (what proxies and logs see)
		q.Header.Set(up2k.OneShotHeader, enc)
		return q, nil
	}, true)
	if err != nil {
		return reply{}, nil, err
	}
	rep, err := parseReply(body, it.hashes)
	return rep, hdr, err
}

// tryOneShot tries it as a one-shot post; done is false when drive goes on
// with handshakes (the server still needs it, or took the post in a way
// that asks for them).
func (r *run) tryOneShot(ctx context.Context, it *item) (done bool) {
	rep, hdr, err := r.postOneShot(ctx, it)
	var he *HTTPError
	switch {
	case errors.Is(err, errChanged):
		if err := r.rehash(ctx, it); err != nil {
			r.failIt(it, err)
			return true
		}
		return false
	case errors.Is(err, ErrAuth) || errors.Is(err, ErrTLS):
		r.hsFailed(it, err)
		return true
	case errors.As(err, &he) && he.Status == http.StatusConflict:
		r.hsFailed(it, err) // not to be replaced: skipped, as its handshake would be
		return true
	case errors.As(err, &he) && he.Status < 500:
		// Refused as a one-shot post (a server that took them once and
		// does not now, a proxy that cuts the header): plain handshakes
		// from now on.
		r.oneShot.Store(false)
		return false
	case err != nil:
		r.failIt(it, err)
		return true
	}
	if len(rep.Need) > 0 {
		// Started, not finished (its chunk being written elsewhere): its
		// handshakes go on under the name the server gave it.
		r.note(true)
		it.owned, it.purl = rep.Name, rep.Purl
		return false
	}
	where, published := parseDone(hdr)
	if !published {
		r.note(false) // it was there already: the bytes were not needed
		r.finish(it, "present", rep.Purl+rep.Name)
		return true
	}
	r.note(true)
	r.st.sent.Add(it.size)
	r.st.bytesDone.Add(it.size)
	it.sent.Add(it.size)
	if it.changed() {
		// Published as it was when hashed, and changed since: hashed
		// again, it replaces what this post published.
		it.owned, it.purl = rep.Name, rep.Purl
		if err := r.rehash(ctx, it); err != nil {
			r.failIt(it, err)
			return true
		}
		it.redo = true
		return false
	}
	r.finish(it, "uploaded", where)
	return true
}

// maxStale is how many handshakes in a row may bring no progress before a
// file is given up.
const maxStale = 6

// drive uploads one file: handshake, needed chunks, final handshake (none
// when the completing post said the file is published), again while
// chunks are missing; a file that changes is hashed again.
func (r *run) drive(ctx context.Context, it *item) {
	stale, rehashes, prev, rounds := 0, 0, -1, 0
	if r.wantOneShot(it) && r.tryOneShot(ctx, it) {
		return
	}
	for {
		body, err := r.handshake(ctx, it, false)
		if err != nil {
			r.hsFailed(it, err)
			return
		}
		rep, err := parseReply(body, it.hashes)
		if err != nil {
			r.failIt(it, err)
			return
		}
		if rounds == 0 && !it.redo && it.owned == "" && it.size > 0 {
			r.note(len(rep.Need) > 0) // (an empty file is never needed: it says nothing)
		}
		if len(rep.Need) == 0 {
			if rounds == 0 && it.sent.Load() == 0 {
				r.finish(it, "present", rep.Purl+rep.Name)
			} else {
				r.finish(it, "uploaded", rep.Purl+rep.Name)
			}
			return
		}
		if prev >= 0 && len(rep.Need) >= prev {
			if stale++; stale >= maxStale {
				r.failIt(it, fmt.Errorf("the server still needs %d chunks after %d tries", len(rep.Need), stale))
				return
			}
			if !sleepCtx(ctx, backoff(stale)) {
				r.failIt(it, ctx.Err())
				return
			}
		} else {
			stale = 0
		}
		prev = len(rep.Need)
		rounds++
		if it.owned == "" {
			it.owned, it.purl = rep.Name, rep.Purl
		}
		fin, err := r.sendChunks(ctx, it, rep)
		if err == nil && it.changed() {
			err = errChanged
		}
		var he *HTTPError
		switch {
		case err == nil && fin != "":
			// The last post published the file, durably, before its
			// reply: the final handshake would only say so.
			r.finish(it, "uploaded", fin)
			return
		case err == nil:
		case errors.Is(err, errChanged) || errors.As(err, &he) && strings.Contains(he.Msg, "corrupted"):
			if rehashes++; rehashes > 3 {
				r.failIt(it, fmt.Errorf("it kept changing while being uploaded"))
				return
			}
			if err := r.rehash(ctx, it); err != nil {
				r.failIt(it, err)
				return
			}
			it.redo, prev = true, -1
		case errors.Is(err, ErrAuth) || errors.Is(err, ErrTLS):
			r.hsFailed(it, err)
			return
		case errors.As(err, &he) && he.Status < 500:
			// A chunk the server would not take (already there, being
			// written, a session gone): the next handshake says what it
			// still needs.
		default:
			r.failIt(it, err)
			return
		}
	}
}

// hsFailed handles a handshake that failed.
func (r *run) hsFailed(it *item, err error) {
	if errors.Is(err, ErrAuth) || errors.Is(err, ErrTLS) {
		r.cancel(err) // every other file would fail the same way
		r.failIt(it, err)
		return
	}
	if he, ok := isHTTP(err, http.StatusConflict); ok {
		r.finish(it, "skipped", he.Msg)
		return
	}
	r.failIt(it, err)
}

// search asks the server for files with this content.
func (r *run) search(ctx context.Context, it *item) {
	if it.size == 0 {
		r.found(it, nil) // nothing to search by (servers refuse an empty hash list)
		return
	}
	body, err := r.handshake(ctx, it, true)
	if err != nil {
		if he, ok := isHTTP(err, http.StatusInternalServerError); ok {
			// The server cannot search (hoard without -e2d says so with a
			// 500): every other file would get the same answer, after
			// the same retries. Said once, and the run ends.
			err = fmt.Errorf("the server cannot search: %w", he)
			r.cancel(err)
		}
		r.hsFailed(it, err)
		return
	}
	var rep struct {
		Hits []struct {
			RP string `json:"rp"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(body, &rep); err != nil || rep.Hits == nil {
		r.failIt(it, fmt.Errorf("the search reply is not the JSON expected"))
		return
	}
	var hits []string
	for _, h := range rep.Hits {
		hits = append(hits, "/"+strings.TrimPrefix(clean(h.RP), "/"))
	}
	r.found(it, hits)
}

// A post is one chunk POST: count consecutive chunks of a file.
type post struct {
	it     *item
	url    string
	wark   string
	hashes string // X-Up2k-Hash
	off, n int64
	done   chan error
	fin    string // where the server published the file, when this post completed it (up2k.DoneHeader)
}

// maxStitch bounds the chunks of one post (and so X-Up2k-Hash's length).
const maxStitch = 128

// sendChunks sends the needed chunks, stitching runs of consecutive ones,
// over the shared connections (one at a time when the server's file is
// not sparse, as copyparty asks). fin is where the server published the
// file when one of the posts completed it (hoard says so; copyparty
// does not): the final handshake is then not needed.
func (r *run) sendChunks(ctx context.Context, it *item, rep reply) (fin string, err error) {
	cs := up2k.ChunkSize(it.size)
	first := make(map[string]int, len(it.hashes))
	for i, h := range it.hashes {
		if _, ok := first[h]; !ok {
			first[h] = i
		}
	}
	idx := make([]int, 0, len(rep.Need))
	for _, h := range rep.Need {
		idx = append(idx, first[h])
	}
	slices.Sort(idx)
	per := max(1, min(int(r.o.PostSize/cs), maxStitch))
	if rep.Sprs {
		per = max(1, min(per, (len(idx)+r.o.Jobs-1)/r.o.Jobs)) // use every connection
	}
	// Whole 5 MiB groups per post where a post holds one: a server on S3
	// puts those straight into the file's parts and stages the rest
	// (docs/s3.md, "Parts"); posts from chunk 0 on then begin on groups.
	if g := int((5<<20 + cs - 1) / cs); per > g {
		per -= per % g
	}
	isFirst := func(i int) bool { return first[it.hashes[i]] == i }
	var groups [][]int
	for k := 0; k < len(idx); {
		g := []int{idx[k]}
		k++
		for k < len(idx) && len(g) < per && idx[k] == g[len(g)-1]+1 && isFirst(idx[k]) {
			g = append(g, idx[k])
			k++
		}
		groups = append(groups, g)
	}
	url := r.w.base + escapePath(rep.Purl)
	done := make(chan error, len(groups))
	mk := func(g []int) *post {
		off := int64(g[0]) * cs
		end := min(it.size, int64(g[len(g)-1]+1)*cs)
		return &post{it: it, url: url, wark: rep.Wark, hashes: stitch(it.hashes, g), off: off, n: end - off, done: done}
	}
	var firstErr error
	var posts []*post
	finOf := func() string {
		for _, p := range posts {
			if p.fin != "" {
				return p.fin // read after its done: the sender wrote it before
			}
		}
		return ""
	}
	if !rep.Sprs {
		for _, g := range groups {
			p := mk(g)
			if !send(ctx, r.posts, p) {
				return "", ctx.Err()
			}
			posts = append(posts, p)
			if err := <-done; err != nil {
				return "", err
			}
		}
		return finOf(), nil
	}
	for _, g := range groups {
		p := mk(g)
		if !send(ctx, r.posts, p) {
			break
		}
		posts = append(posts, p)
	}
	for range posts {
		if err := <-done; err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if firstErr == nil && len(posts) < len(groups) {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		return "", firstErr
	}
	return finOf(), nil
}

// stitch is X-Up2k-Hash for chunks g: one hash, or copyparty's compact
// form "<first>,<n>,<prefixes of the others run together>".
func stitch(hashes []string, g []int) string {
	if len(g) == 1 {
		return hashes[g[0]]
	}
	var b strings.Builder
	b.WriteString(hashes[g[0]])
	b.WriteString(",8,")
	for _, i := range g[1:] {
		b.WriteString(hashes[i][:8])
	}
	return b.String()
}

// send posts one run of chunks, retrying; before a retry it checks that
// the file is unchanged.
func (r *run) send(ctx context.Context, p *post) error {
	tries := 0
	_, hdr, err := r.w.doH(ctx, func() (*http.Request, error) {
		if tries++; tries > 1 && p.it.changed() {
			return nil, errChanged
		}
		q, err := http.NewRequest(http.MethodPost, p.url, chunkBody(p.it.f, p.off, p.n))
		if err != nil {
			return nil, err
		}
		q.ContentLength = p.n
		q.Header.Set("Content-Type", "application/octet-stream")
		q.Header.Set("X-Up2k-Hash", p.hashes)
		q.Header.Set("X-Up2k-Wark", p.wark)
		return q, nil
	}, false)
	if err == nil {
		r.st.sent.Add(p.n)
		r.st.bytesDone.Add(p.n)
		p.it.sent.Add(p.n)
		if where, ok := parseDone(hdr); ok {
			p.fin = where
		}
	}
	return err
}
