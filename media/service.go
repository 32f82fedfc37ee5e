package media

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"hoard/store"
)

// Config sets up a Service.
type Config struct {
	Workers   int           // jobs at once; default runtime.NumCPU()
	QueueWait time.Duration // longest wait for a worker before ErrBusy; default 30 s
	Timeout   time.Duration // longest conversion (ffmpeg is killed); default 60 s
	CacheMax  int64         // bytes of cache per state folder before eviction; default 1 GiB
	MaxPixels int64         // largest image decoded; default 64 megapixels
	FFmpeg    string        // default "ffmpeg" (looked up in PATH)
	FFprobe   string        // default "ffprobe"
	Nice      int           // niceness of ffmpeg; default 10
	// MaxObjectCopy bounds the copy of an object FFmpeg converts on a
	// volume on object storage (object.go); default 2 GiB.
	MaxObjectCopy int64
	Logger        *slog.Logger
}

// ErrBusy: the job waited in the queue longer than QueueWait.
var ErrBusy = &store.Error{Kind: store.KindUnavailable, Msg: "the thumbnailer is busy; try again later", RetryAfter: 5 * time.Second}

// errChangedWhile: the source changed while it was converted (nothing is
// cached); the client may ask again at once.
var errChangedWhile = &store.Error{Kind: store.KindUnavailable, Msg: "the file changed while its thumbnail was made; try again", RetryAfter: time.Second}

// ErrNoAudio is returned for a waveform or transcode of a file without
// audio.
var ErrNoAudio = errNoAudio

// Service makes thumbnails, waveforms and transcodes: one bounded worker
// pool, identical concurrent requests coalesced into one job, results
// cached below each volume's state folder.
type Service struct {
	cfg  Config
	log  *slog.Logger
	sem  chan struct{}
	runs atomic.Int64 // jobs that did work, for tests and logs

	// afterPublish, when set (tests), runs after an output is published.
	afterPublish func(c *cache, name string)

	mu     sync.Mutex
	jobs   map[string]*job
	caches map[string]*cache // by state folder
	tmp    string            // cache for volumes without a state folder
}

// New returns a Service for cfg.
func New(cfg Config) *Service {
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.NumCPU()
	}
	if cfg.QueueWait <= 0 {
		cfg.QueueWait = 30 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.CacheMax <= 0 {
		cfg.CacheMax = 1 << 30
	}
	if cfg.MaxPixels <= 0 {
		cfg.MaxPixels = 64 << 20
	}
	if cfg.FFmpeg == "" {
		cfg.FFmpeg = "ffmpeg"
	}
	if cfg.FFprobe == "" {
		cfg.FFprobe = "ffprobe"
	}
	if cfg.Nice == 0 {
		cfg.Nice = 10
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Service{cfg: cfg, log: cfg.Logger.With("pkg", "media"), sem: make(chan struct{}, cfg.Workers), jobs: map[string]*job{}, caches: map[string]*cache{}}
	if _, err := exec.LookPath(cfg.FFmpeg); err != nil {
		s.log.Warn("FFmpeg not found: video, audio and WebP thumbnails, waveforms and transcodes are off", "ffmpeg", cfg.FFmpeg)
	}
	return s
}

// Close removes the temporary cache of volumes without a state folder.
func (s *Service) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.caches {
		c.root.Close()
	}
	if s.tmp != "" {
		return os.RemoveAll(s.tmp)
	}
	return nil
}

// Runs is how many jobs did work since start.
func (s *Service) Runs() int64 { return s.runs.Load() }

// Request names the file to derive from, as the caller resolved it.
type Request struct {
	Vol    *store.Volume
	Rel    string
	Info   fs.FileInfo // of the file at Rel; with Rel it keys the cache
	Params Params
	// File, when set, is the source instead of Vol and Rel (Rel then only
	// gives the extension): Get returns only finished outputs, waits for a
	// worker without the queue deadline, and caches in a temporary folder
	// keyed by the file's device and inode. For archives.
	File *os.File
}

// How says how a Result came to be.
type How string

const (
	Cached How = "cached" // from the cache, no work
	Made   How = "made"   // this request started the job
	Shared How = "shared" // joined another request's job
)

// Result is what Get returns: exactly one of File (a finished, cached
// output), Stream (a transcode still being written, read as it grows) or
// Icon (the file cannot be thumbnailed) is set.
type Result struct {
	File    *os.File
	Size    int64
	ModTime time.Time
	Stream  io.ReadCloser
	Icon    bool
	Reason  string // why Icon
	Format  Format
	How     How
}

// Close releases the result's file or stream.
func (r *Result) Close() error {
	if r.File != nil {
		return r.File.Close()
	}
	if r.Stream != nil {
		return r.Stream.Close()
	}
	return nil
}

// Source kinds by extension.
var (
	imageExt = set("jpg jpeg jpe jfif png gif bmp tif tiff webp")
	videoExt = set("mp4 m4v mkv webm mov avi mpg mpeg ts mts m2ts wmv flv 3gp ogv vob")
	audioExt = set("mp3 flac ogg oga opus m4a aac wav wma aif aiff ape wv mka mpc ac3 dts amr tta")
	// Audio a transcode leaves as it is in an archive.
	keepAudioExt = set("aac m4a mp3 ogg opus wma")
)

func set(s string) map[string]bool {
	m := map[string]bool{}
	for _, e := range strings.Fields(s) {
		m[e] = true
	}
	return m
}

func extOf(name string) string {
	return strings.ToLower(strings.TrimPrefix(path.Ext(name), "."))
}

// IsAudio tells whether name has an audio file's extension.
func IsAudio(name string) bool { return audioExt[extOf(name)] }

// KeepAudio tells whether name is audio that a transcode modifier leaves
// as it is (aac, m4a, mp3, ogg, opus, wma).
func KeepAudio(name string) bool { return keepAudioExt[extOf(name)] }

// needsFFmpeg tells whether making p from name needs FFmpeg.
func needsFFmpeg(name string, p Params) bool {
	return p.Kind != KindThumb || p.Format == WebP || !imageExt[extOf(name)]
}

// Get returns the derived form p of the file, from the cache or by a
// job, waiting at most ctx. Errors: ErrBadParams-wrapped for impossible
// combinations, ErrNoFFmpeg, ErrNoAudio, ErrBusy, ctx's error, or a
// conversion failure.
func (s *Service) Get(ctx context.Context, rq Request) (*Result, error) {
	r, err := s.get(ctx, rq)
	if err != nil {
		return nil, classify(ctx, err, rq)
	}
	return r, nil
}

// classify gives Get's errors their kind and a message naming the file
// (its last path element only). A conversion that failed is
// store.KindInternal: a thumbnail then gets the icon.
func classify(ctx context.Context, err error, rq Request) error {
	name := path.Base("/" + rq.Rel)
	switch {
	case errors.Is(err, ErrNoFFmpeg), errors.Is(err, ErrBusy):
		return err
	case rq.File == nil && rq.Vol != nil && rq.Vol.Remote() && (store.KindOf(err) == store.KindUnavailable || errors.Is(err, store.ErrNotFound) || errors.Is(err, errObjectTooLarge)):
		return err // object.go: the store is down, the object went or changed, or it is too large to copy
	case errors.Is(err, ErrNoAudio) && rq.Params.Kind == KindWaveform:
		return &store.Error{Kind: store.KindNotFound, Msg: "no waveform: " + name + " has no audio", Err: err}
	case errors.Is(err, ErrNoAudio):
		return &store.Error{Kind: store.KindUnsupported, Msg: "cannot transcode: " + name + " has no audio", Err: err}
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return &store.Error{Kind: store.KindInternal, Msg: "transcoding " + name + " failed", Err: err}
}

func (s *Service) get(ctx context.Context, rq Request) (*Result, error) {
	p := rq.Params
	ext := extOf(rq.Rel)
	if p.Kind == KindThumb && !imageExt[ext] && !videoExt[ext] && !audioExt[ext] {
		return &Result{Icon: true, Reason: "not a media file", Format: p.Format, How: Cached}, nil
	}
	if p.Kind != KindThumb && !videoExt[ext] && !audioExt[ext] {
		return nil, ErrNoAudio
	}
	var vol *store.Volume
	if rq.File == nil {
		vol = rq.Vol
	}
	c, err := s.cacheFor(vol)
	if err != nil {
		return nil, err
	}
	name := cacheName(rq, c.dir)
	if r, ok := c.lookup(name, p.Format); ok {
		return r, nil
	}
	if needsFFmpeg(rq.Rel, p) {
		if _, err := exec.LookPath(s.cfg.FFmpeg); err != nil {
			return nil, ErrNoFFmpeg
		}
	}
	s.mu.Lock()
	j, shared := s.jobs[name], true
	if j == nil {
		shared = false
		j = &job{name: name, rq: rq, c: c, done: make(chan struct{}), started: make(chan struct{})}
		j.release = sync.OnceFunc(func() {
			if j.kept {
				j.unref()
			}
		})
		if rq.File != nil {
			// The job may outlive the caller's file and must not move its
			// offset: it reads its own open file description of the same
			// file (already confined to its volume when it was opened).
			f, err := reopen(rq.File)
			if err != nil {
				s.mu.Unlock()
				return nil, err
			}
			j.rq.File = f
		}
		j.ctx, j.cancel = context.WithCancel(context.Background())
		s.jobs[name] = j
		go s.run(j)
	}
	j.waiters++
	s.mu.Unlock()
	how := Made
	if shared {
		how = Shared
	}
	streaming := p.Kind == KindTranscode && p.Format != CAF && rq.File == nil
	var started <-chan struct{}
	if streaming {
		started = j.started
	}
	select {
	case <-ctx.Done():
		s.leave(j)
		return nil, ctx.Err()
	case <-started:
		// The transcode is being written: read it as it grows. The
		// stream holds this waiter's place until it is closed.
		if j.ref() {
			return &Result{Stream: &tail{ctx: ctx, s: s, j: j}, Format: p.Format, How: how}, nil
		}
		<-j.done // finished already: serve it from the cache
	case <-j.done:
	}
	defer s.leave(j)
	if j.err != nil {
		if errors.Is(j.err, errCannot) && p.Kind == KindThumb {
			return &Result{Icon: true, Reason: j.err.Error(), Format: p.Format, How: how}, nil
		}
		return nil, j.err
	}
	if r, ok := c.lookup(name, p.Format); ok {
		r.How = how
		return r, nil
	}
	// Evicted already (a small cache under a burst of other outputs):
	// the job still holds its output open until its last waiter leaves.
	return j.output(how)
}

// output opens the finished job's own output file, whatever became of
// its cache name. Only a waiter may call it (its place keeps the file open).
func (j *job) output(how How) (*Result, error) {
	f, err := reopen(j.work)
	if err != nil {
		return nil, fmt.Errorf("the finished %s vanished from the cache: %w", j.rq.Params.Format, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Result{File: f, Size: fi.Size(), ModTime: fi.ModTime(), Format: j.rq.Params.Format, How: how}, nil
}

// leave drops one waiter of j; the last one to leave cancels the job
// and, once it is done, lets go of its output.
func (s *Service) leave(j *job) {
	s.mu.Lock()
	j.waiters--
	last := j.waiters == 0
	s.mu.Unlock()
	if last {
		j.cancel()
		select {
		case <-j.done:
			j.release()
		default:
		}
	}
}

// job is one conversion, shared by every request for the same output.
type job struct {
	name    string
	rq      Request
	c       *cache
	ctx     context.Context
	cancel  context.CancelFunc
	waiters int // guarded by Service.mu

	started chan struct{} // closed when work (below) exists
	done    chan struct{} // closed when finished; err is then set

	// work is the output being written; readers use ReadAt. refs counts
	// the job and its open tails; the last one closes it.
	work   *os.File
	refMu  sync.Mutex
	refs   int
	closed bool
	err    error

	// A finished output stays open (the job keeps its reference) until
	// its waiters have their own handles: eviction may unlink the cache
	// name between the publish and their lookup.
	kept    bool
	release func()
}

// ref takes a reference on the work file unless it is already closed.
func (j *job) ref() bool {
	j.refMu.Lock()
	defer j.refMu.Unlock()
	if j.closed {
		return false
	}
	j.refs++
	return true
}

func (j *job) unref() {
	j.refMu.Lock()
	defer j.refMu.Unlock()
	j.refs--
	if j.refs == 0 {
		j.closed = true
		j.work.Close()
	}
}

// run waits for a worker, converts, and publishes the output in the
// cache (a failure to thumbnail as an empty marker).
func (s *Service) run(j *job) {
	defer func() {
		s.mu.Lock()
		delete(s.jobs, j.name)
		s.mu.Unlock()
		j.cancel()
		close(j.done)
		// No new waiter can join now; the last one present releases the
		// output (see leave), or nobody is left and it is released here.
		s.mu.Lock()
		left := j.waiters
		s.mu.Unlock()
		if left == 0 {
			j.release()
		}
	}()
	wait := s.cfg.QueueWait
	if j.rq.File != nil {
		wait = 24 * time.Hour // archives wait their turn
		defer j.rq.File.Close()
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case s.sem <- struct{}{}:
	case <-t.C:
		j.err = fmt.Errorf("%w: waited %v for one of %d workers", ErrBusy, s.cfg.QueueWait, s.cfg.Workers)
		return
	case <-j.ctx.Done():
		j.err = j.ctx.Err()
		return
	}
	defer func() { <-s.sem }()
	s.runs.Add(1)
	ctx, cancel := context.WithTimeout(j.ctx, s.cfg.Timeout)
	defer cancel()
	start := time.Now()
	j.err = s.convert(ctx, j)
	if j.err != nil && !errors.Is(j.err, context.Canceled) {
		s.log.Info("conversion failed", "file", j.rq.Rel, "params", j.rq.Params.String(), "err", j.err)
	} else {
		s.log.Debug("converted", "file", j.rq.Rel, "params", j.rq.Params.String(), "dur", time.Since(start), "err", j.err)
	}
}

func (s *Service) convert(ctx context.Context, j *job) (err error) {
	rq, p := j.rq, j.rq.Params
	ext := extOf(rq.Rel)
	var src *os.File
	var rs io.ReadSeeker // what an image is decoded from
	var fi fs.FileInfo
	switch {
	case rq.File != nil:
		src = rq.File
		fi, err = src.Stat()
	case rq.Vol.Remote():
		// object.go: ranged reads for an image, a bounded copy in the
		// state folder for FFmpeg.
		var done func()
		src, rs, fi, done, err = s.openObject(ctx, j, p.Kind == KindThumb && imageExt[ext])
		if err == nil {
			defer done()
		}
	default:
		src, fi, err = rq.Vol.Open(rq.Rel)
		if err == nil {
			defer src.Close()
		}
	}
	if err != nil {
		return err
	}
	if rs == nil {
		rs = src
	}
	if fi.Size() != rq.Info.Size() || !fi.ModTime().Equal(rq.Info.ModTime()) || etagOf(fi) != etagOf(rq.Info) {
		return errChangedWhile
	}
	work, wname, err := j.c.create()
	if err != nil {
		return err
	}
	j.work = work
	j.refs = 1
	close(j.started)
	defer func() {
		if err == nil {
			err = j.c.publish(wname, j.name)
			if err == nil && s.afterPublish != nil {
				s.afterPublish(j.c, j.name)
			}
		}
		if err != nil {
			j.c.remove(wname)
			if errors.Is(err, errCannot) && p.Kind == KindThumb {
				j.c.markFailed(j.name)
			}
		}
		if err == nil {
			j.kept = true // released by run and leave
		} else {
			j.unref()
		}
	}()
	switch p.Kind {
	case KindWaveform:
		return s.ffWaveform(ctx, src, work)
	case KindTranscode:
		return s.ffTranscode(ctx, src, work, p.Format)
	}
	var img image.Image
	orient := 1
	if imageExt[ext] {
		img, orient, err = decodeImage(rs, s.cfg.MaxPixels)
	} else {
		img, err = s.ffFrame(ctx, src, p, audioExt[ext])
		if errors.Is(err, errNoAudio) {
			err = cannot("no picture or sound found")
		}
	}
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	th := thumbnail(img, orient, p, ScaleBoxCatmullRom)
	if p.Format == WebP {
		return s.encodeWebP(ctx, th, work)
	}
	return encodeJPEG(work, th)
}

// cacheName is the cache file of rq: a hash of the state folder's view of
// the file (volume, path, size, mtime) and the parameters.
func cacheName(rq Request, dir string) string {
	h := sha256.New()
	if rq.File != nil {
		dev, ino, _ := store.FileID(rq.Info)
		fmt.Fprintf(h, "fd\x00%d\x00%d\x00%s", dev, ino, path.Ext(rq.Rel))
	} else {
		fmt.Fprintf(h, "%s\x00%s\x00%s", dir, rq.Vol.VPath, rq.Rel)
	}
	fmt.Fprintf(h, "\x00%d\x00%d\x00%s", rq.Info.Size(), rq.Info.ModTime().UnixNano(), rq.Params.String())
	if e := etagOf(rq.Info); e != "" {
		// An object: a replaced one has another ETag, whatever its time.
		fmt.Fprintf(h, "\x00etag\x00%s", e)
	}
	sum := hex.EncodeToString(h.Sum(nil)[:16])
	return sum[:2] + "/" + sum + "." + rq.Params.Format.Ext()
}

func (s *Service) cacheFor(v *store.Volume) (*cache, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := ""
	if v != nil {
		dir = v.HistPath()
	}
	if dir == "" {
		if s.tmp == "" {
			t, err := os.MkdirTemp("", "hoard-th-")
			if err != nil {
				return nil, err
			}
			s.tmp = t
		}
		dir = s.tmp
	}
	if c := s.caches[dir]; c != nil {
		return c, nil
	}
	c, err := openCache(dir+string(os.PathSeparator)+"th", s.cfg.CacheMax, s.log)
	if err != nil {
		return nil, err
	}
	s.caches[dir] = c
	return c, nil
}

// tail reads a job's output while it is written, and to its end.
type tail struct {
	ctx  context.Context // the reader's; it ends a wait for more output
	s    *Service
	j    *job
	off  int64
	once sync.Once
}

func (t *tail) Read(p []byte) (int, error) {
	for {
		n, err := t.j.work.ReadAt(p, t.off)
		t.off += int64(n)
		if n > 0 {
			return n, nil
		}
		if err != nil && err != io.EOF {
			return 0, err
		}
		select {
		case <-t.j.done:
			// Finished: read what is left, then the job's verdict.
			if n, _ := t.j.work.ReadAt(p, t.off); n > 0 {
				t.off += int64(n)
				return n, nil
			}
			if t.j.err != nil {
				return 0, t.j.err
			}
			return 0, io.EOF
		case <-t.ctx.Done():
			return 0, t.ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (t *tail) Close() error {
	t.once.Do(func() {
		t.j.unref()
		t.s.leave(t.j)
	})
	return nil
}

// Icon is a generic SVG picture for a file that cannot be thumbnailed:
// its extension on a colour derived from it.
func Icon(name string) []byte {
	ext := extOf(name)
	if ext == "" {
		ext = "file"
	}
	if len(ext) > 8 {
		ext = ext[:8]
	}
	sum := sha256.Sum256([]byte(ext))
	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<svg version="1.1" viewBox="0 0 100 80" xmlns="http://www.w3.org/2000/svg"><rect width="100%%" height="100%%" fill="#%02x%02x%02x"/><text x="50%%" y="50%%" dominant-baseline="middle" text-anchor="middle" font-family="monospace" font-size="%d" fill="#fff">`, sum[0]/2+64, sum[1]/2+64, sum[2]/2+64, 28-2*len(ext))
	for _, r := range ext {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		default:
			b.WriteRune(r)
		}
	}
	b.WriteString("</text></svg>\n")
	return b.Bytes()
}

// Stats are the worker pool's state, for the metrics: jobs waiting for a
// worker and workers converting.
func (s *Service) Stats() (queued, busy int) {
	busy = len(s.sem)
	s.mu.Lock()
	jobs := len(s.jobs)
	s.mu.Unlock()
	return max(jobs-busy, 0), busy
}
