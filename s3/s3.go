// Package s3 is store.ObjectStore over an S3-compatible object store
// (MinIO, Ceph RGW, SeaweedFS, AWS S3), by minio-go. store declares what
// it needs; main wires this in (store.Config.Objects). See docs/s3.md.
package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"hoard/store"
)

// partSize is the size of each part of a streamed upload: the memory one
// upload holds, whatever the file's size (S3's minimum is 5 MiB; 10,000
// parts of 16 MiB carry 156 GiB).
const partSize = 16 << 20

// maxPuts caps the uploads streaming into one bucket at once, and with
// them the part buffers held (maxPuts × partSize = 512 MiB); one more
// waits up to putWait for a turn, then is refused with 503.
const (
	maxPuts = 32
	putWait = 2 * time.Second
)

// ErrBusy is every upload slot taken for longer than putWait.
var ErrBusy = &store.Error{Kind: store.KindUnavailable, Msg: "too many uploads to the object store at once; try again shortly", RetryAfter: 2 * time.Second}

// Config says how to reach the object store.
type Config struct {
	Endpoint  string // http://host:port or https://host[:port]
	AccessKey string
	SecretKey string
	Region    string
	// CallTimeout caps the time one request waits on the store without
	// progress (--s3-timeout; 0: DefaultCallTimeout). See watch.
	CallTimeout time.Duration
}

// DefaultCallTimeout is Config.CallTimeout when unset.
const DefaultCallTimeout = 30 * time.Second

// FromEnv reads the standard variables AWS_ENDPOINT_URL,
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION; endpoint, when
// not empty (--s3-endpoint), wins over AWS_ENDPOINT_URL.
func FromEnv(endpoint string) Config {
	c := Config{
		Endpoint:  os.Getenv("AWS_ENDPOINT_URL"),
		AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"),
		SecretKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
		Region:    os.Getenv("AWS_REGION"),
	}
	if endpoint != "" {
		c.Endpoint = endpoint
	}
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	return c
}

// Opener returns store.Config.Objects for c: it opens the bucket of a
// volume flag s3=BUCKET[/PREFIX] and checks it exists.
func Opener(c Config) func(target string) (store.ObjectStore, error) {
	return func(target string) (store.ObjectStore, error) {
		bucket, _, err := store.ParseS3Target(target)
		if err != nil {
			return nil, err
		}
		return Open(context.Background(), c, bucket)
	}
}

// Bucket is one bucket of an object store.
type Bucket struct {
	c      *minio.Client
	core   minio.Core
	bucket string
	puts   chan struct{} // upload slots (maxPuts)
	cap    time.Duration // see watch
	spares chan struct{} // spare part buffers in use (maxSpares)
}

// maxSpares caps the second part buffers of streamed uploads (see
// putStream): maxSpares × partSize = 128 MiB more than the uploads'
// own, at most.
const maxSpares = 8

// spare takes a second part buffer, or nil when maxSpares are in use
// (the upload then takes turns, as before).
func (b *Bucket) spare() []byte {
	select {
	case b.spares <- struct{}{}:
		// Not pooled: a request body's reader may still be read by the
		// transport for a moment after a failed request returned.
		return make([]byte, partSize)
	default:
		return nil
	}
}

func (b *Bucket) unspare() { <-b.spares }

// Open connects to bucket and checks that it exists. An unreachable store
// is no error here (it may come up later; requests then answer 503); a
// missing bucket or refused credentials are.
func Open(ctx context.Context, c Config, bucket string) (*Bucket, error) {
	if c.Endpoint == "" {
		return nil, errors.New("s3=: no endpoint; set AWS_ENDPOINT_URL or --s3-endpoint")
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("s3 endpoint %q: want http://HOST[:PORT] or https://HOST[:PORT]", c.Endpoint)
	}
	if c.AccessKey == "" || c.SecretKey == "" {
		return nil, errors.New("s3=: no credentials; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	mc, err := minio.New(u.Host, &minio.Options{
		Creds:      credentials.NewStaticV4(c.AccessKey, c.SecretKey, ""),
		Secure:     u.Scheme == "https",
		Region:     c.Region,
		MaxRetries: 2, // a store that is down is a 503 soon, not after minutes
	})
	if err != nil {
		return nil, fmt.Errorf("s3 endpoint %q: %w", c.Endpoint, err)
	}
	b := &Bucket{c: mc, core: minio.Core{Client: mc}, bucket: bucket, puts: make(chan struct{}, maxPuts), cap: c.CallTimeout, spares: make(chan struct{}, maxSpares)}
	if b.cap <= 0 {
		b.cap = DefaultCallTimeout
	}
	ctx, cancel := b.call(ctx, 0)
	defer cancel()
	ok, err := mc.BucketExists(ctx, bucket)
	err = mapCtx(ctx, err)
	switch {
	case err != nil && errors.Is(mapErr(err), store.ErrObjectStoreDown):
		// not reachable now; requests will say so
	case err != nil:
		return nil, fmt.Errorf("s3 bucket %q at %s: %w", bucket, c.Endpoint, err)
	case !ok:
		return nil, fmt.Errorf("s3 bucket %q does not exist at %s (hoard does not create buckets)", bucket, c.Endpoint)
	}
	return b, nil
}

// errRefused is the object store refusing hoard: credentials, policy, a
// missing bucket. A configuration error, not the client's.
var errRefused = &store.Error{Kind: store.KindInternal, Msg: "the object store refused the server's request (check its bucket and credentials)"}

// mapErr gives minio-go's errors store's meanings.
func mapErr(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	r := minio.ToErrorResponse(err)
	switch {
	case r.Code == "NoSuchKey" || r.StatusCode == 404 && r.Code != "NoSuchBucket":
		return fmt.Errorf("%w: %v", store.ErrNotFound, err)
	case r.Code == "KeyTooLongError":
		return fmt.Errorf("%w: %v", store.ErrKeyTooLong, err)
	case r.Code == "PreconditionFailed" || r.StatusCode == 412:
		return fmt.Errorf("%w: %v", store.ErrExists, err)
	case r.Code == "SlowDown" || r.StatusCode == 0 || r.StatusCode >= 500:
		return fmt.Errorf("%w: %v", store.ErrObjectStoreDown, err)
	case r.StatusCode == 403 || r.Code == "NoSuchBucket":
		return fmt.Errorf("%w: %v", errRefused, err)
	}
	return err
}

// keyFits is ErrKeyTooLong for a key S3 does not take (longer than
// store.MaxObjectKey). minio-go refuses such a key before it sends
// anything, with an error of no status that mapErr would take for a store
// that is down (503, and clients retry it for ever), so it is checked
// here instead. No object has one, so a read finds nothing and a write is
// the client's bad name.
func keyFits(key string) error {
	if len(key) > store.MaxObjectKey {
		return fmt.Errorf("%w: %d bytes", store.ErrKeyTooLong, len(key))
	}
	return nil
}

func info(oi minio.ObjectInfo) store.ObjectInfo {
	meta := map[string]string{}
	for k, v := range oi.UserMetadata {
		meta[strings.ToLower(k)] = v
	}
	// Whole seconds: a HEAD's Last-Modified has no more, a listing's has
	// milliseconds; the index compares the two.
	return store.ObjectInfo{Key: oi.Key, Size: oi.Size, ETag: strings.Trim(oi.ETag, `"`), ModTime: oi.LastModified.Truncate(time.Second), Dir: strings.HasSuffix(oi.Key, "/"), Meta: meta}
}

// Stat describes the object key.
func (b *Bucket) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	if key == "" || strings.HasSuffix(key, "/") || keyFits(key) != nil {
		return store.ObjectInfo{}, store.ErrNotFound
	}
	ctx, cancel := b.call(ctx, 0)
	defer cancel()
	oi, err := b.c.StatObject(ctx, b.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return store.ObjectInfo{}, mapCtx(ctx, err)
	}
	return info(oi), nil
}

// Open reads the object oi as Stat saw it, lazily.
func (b *Bucket) Open(ctx context.Context, oi store.ObjectInfo) (io.ReadSeekCloser, error) {
	return &reader{b: b, ctx: ctx, key: oi.Key, etag: oi.ETag, size: oi.Size}, nil
}

// reader reads one version of an object by ranged GETs: the first Read
// after a Seek opens a GET from that offset to the end.
type reader struct {
	b         *Bucket
	ctx       context.Context
	key, etag string
	size, off int64
	body      io.ReadCloser
	w         *watch // the open GET's deadline (see watch)
}

func (r *reader) Read(p []byte) (int, error) {
	if r.off >= r.size {
		return 0, io.EOF
	}
	if r.body == nil {
		var opt minio.GetObjectOptions
		if err := opt.SetMatchETag(r.etag); err != nil {
			return 0, err
		}
		if r.off > 0 {
			if err := opt.SetRange(r.off, 0); err != nil {
				return 0, err
			}
		}
		w := r.b.watched(r.ctx)
		w.wait()
		body, _, _, err := r.b.core.GetObject(w.ctx, r.b.bucket, r.key, opt)
		w.done()
		if minio.ToErrorResponse(err).StatusCode == 412 {
			w.end()
			return 0, fmt.Errorf("%w: %s changed while it was read", store.ErrNotFound, r.key)
		}
		if err != nil {
			w.end()
			return 0, mapCtx(w.ctx, err)
		}
		r.body, r.w = body, w
	}
	// The clock runs only inside Read: a reader its client is slow to
	// drain is not a store that hangs.
	r.w.wait()
	n, err := r.body.Read(p)
	r.w.done()
	r.off += int64(n)
	if errors.Is(err, io.EOF) && r.off < r.size {
		err = io.ErrUnexpectedEOF
	}
	if err != nil && !errors.Is(err, io.EOF) {
		err = mapCtx(r.w.ctx, err)
	}
	return n, err
}

// drop closes the open GET, if any.
func (r *reader) drop() {
	if r.body != nil {
		r.body.Close()
		r.w.end()
		r.body, r.w = nil, nil
	}
}

func (r *reader) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		off += r.off
	case io.SeekEnd:
		off += r.size
	}
	if off < 0 {
		return 0, errors.New("seek before the start")
	}
	if off != r.off {
		r.drop()
	}
	r.off = off
	return off, nil
}

func (r *reader) Close() error {
	r.drop()
	return nil
}

// Put streams r into key as a multipart upload, a part at a time. A key
// ending in "/" is a folder marker: an empty object, r unread.
func (b *Bucket) Put(ctx context.Context, key string, r io.Reader, opt store.ObjectPut) (store.ObjectInfo, error) {
	if err := keyFits(key); err != nil {
		return store.ObjectInfo{}, err
	}
	done, err := b.slot(ctx)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	defer done()
	cb := &cutBody{r: r}
	r = cb
	po := minio.PutObjectOptions{UserMetadata: opt.Meta, PartSize: partSize, ContentType: "application/octet-stream"}
	setConds(&po, opt)
	size := int64(-1)
	if opt.Size > 0 {
		// A known length (an up2k chunk, at most 256 MiB): one streamed
		// PUT, never a multipart upload a dead node could leave behind,
		// and no part buffer.
		size, po.DisableMultipart = opt.Size, true
	}
	if strings.HasSuffix(key, "/") {
		// A folder marker: S3 stores those only by a plain PUT of nothing.
		r, size = strings.NewReader(""), 0
	}
	// Not cancelled with the request: a client that half-closes its
	// connection once it has sent the whole body cancels the request's
	// context (net/http sees its EOF) while the last part is still on its
	// way, and the upload it was owed would be lost. A client gone before
	// the end of its body stops the upload all the same: r fails, and
	// minio-go aborts the multipart upload (which it could not do with a
	// cancelled context either).
	// It keeps its cap (see watch).
	ctx = context.WithoutCancel(ctx)
	w := b.watched(ctx)
	defer w.end()
	r = w.body(r)
	w.wait()
	var ui minio.UploadInfo
	if size < 0 {
		ui, err = b.putStream(w.ctx, key, r, po, opt)
	} else {
		ui, err = b.c.PutObject(w.ctx, b.bucket, key, r, size, po)
	}
	w.done()
	if cut := cb.cut.Load(); cut != nil {
		return store.ObjectInfo{}, *cut
	}
	if er := minio.ToErrorResponse(err); er.Code == "InvalidPart" || er.Code == "NoSuchUpload" {
		// Every part of this upload was stored and answered for, and then
		// the store did not find one when it joined them: it lost it (a
		// node of a distributed set killed during the upload). The
		// store's failure, and the whole PUT can be tried again: 503.
		return store.ObjectInfo{}, fmt.Errorf("%w: it lost a part of the upload: %v", store.ErrObjectStoreDown, err)
	}
	if err != nil {
		return store.ObjectInfo{}, mapCtx(w.ctx, err)
	}
	if opt.Size > 0 {
		// A sized put (session objects, staged chunks, records): its
		// callers need no LastModified, and the ETag is the answer's, so
		// no HEAD follows (one round trip less per staged chunk).
		return store.ObjectInfo{Key: key, Size: ui.Size, ETag: strings.Trim(ui.ETag, `"`), ModTime: time.Now()}, nil
	}
	oi, err := b.Stat(ctx, key) // LastModified and the ETag a GET will give
	if err != nil {
		return store.ObjectInfo{Key: key, Size: ui.Size, ETag: strings.Trim(ui.ETag, `"`), ModTime: time.Now()}, nil
	}
	return oi, nil
}

// putStream is Put of a body of unknown length with a precondition
// (NoClobber, IfMatch). minio-go's own streamed upload sends the
// precondition with the start of its multipart upload only, where the
// store checks it before a byte arrives; two uploads of one name at
// once then both pass and the later completion replaces the earlier,
// acknowledged one. Here the precondition goes with the completion,
// which the store checks and applies under the object's lock. A body
// that fits in one part is one PUT (checked under that lock too). One
// part buffer (partSize) is held, as minio-go holds one.
func (b *Bucket) putStream(ctx context.Context, key string, r io.Reader, po minio.PutObjectOptions, opt store.ObjectPut) (minio.UploadInfo, error) {
	buf := make([]byte, partSize)
	n, end, err := fill(r, buf)
	if err != nil {
		return minio.UploadInfo{}, err
	}
	if end {
		po.DisableMultipart = true
		return b.c.PutObject(ctx, b.bucket, key, bytes.NewReader(buf[:n]), int64(n), po)
	}
	start := minio.PutObjectOptions{UserMetadata: po.UserMetadata, ContentType: po.ContentType}
	id, err := b.core.NewMultipartUpload(ctx, b.bucket, key, start)
	if err != nil {
		return minio.UploadInfo{}, err
	}
	completed := false
	defer func() {
		if !completed {
			b.abort(ctx, key, id)
		}
	}()
	var parts []minio.CompletePart
	var total int64
	// While a part goes to the store, the next is read from the client
	// into a spare buffer when one is free: the two legs overlap instead
	// of taking turns (each waited for the other before).
	spare := b.spare()
	if spare != nil {
		defer b.unspare()
	}
	type sent struct {
		p   minio.ObjectPart
		err error
	}
	for n > 0 {
		num := len(parts) + 1
		if end || spare == nil {
			p, err := b.core.PutObjectPart(ctx, b.bucket, key, id, num, bytes.NewReader(buf[:n]), int64(n), minio.PutObjectPartOptions{})
			if err != nil {
				return minio.UploadInfo{}, err
			}
			parts = append(parts, minio.CompletePart{PartNumber: p.PartNumber, ETag: p.ETag})
			total += int64(n)
			if end {
				break
			}
			if n, end, err = fill(r, buf); err != nil {
				return minio.UploadInfo{}, err
			}
			continue
		}
		ch := make(chan sent, 1)
		go func(data []byte) {
			p, err := b.core.PutObjectPart(ctx, b.bucket, key, id, num, bytes.NewReader(data), int64(len(data)), minio.PutObjectPartOptions{})
			ch <- sent{p, err}
		}(buf[:n])
		total += int64(n)
		nn, nend, ferr := fill(r, spare)
		res := <-ch // the part's buffer is free again only after this
		if res.err != nil {
			return minio.UploadInfo{}, res.err
		}
		if ferr != nil {
			return minio.UploadInfo{}, ferr
		}
		parts = append(parts, minio.CompletePart{PartNumber: res.p.PartNumber, ETag: res.p.ETag})
		buf, spare = spare, buf
		n, end = nn, nend
	}
	done := minio.PutObjectOptions{}
	setConds(&done, opt)
	ui, err := b.core.CompleteMultipartUpload(ctx, b.bucket, key, id, parts, done)
	if err != nil {
		return minio.UploadInfo{}, err
	}
	completed = true
	ui.Size = total
	return ui, nil
}

// cutBody turns a body's own io.ErrUnexpectedEOF (net/http's word for a
// body cut short of its Content-Length) into ErrShortBody. minio-go reads
// parts with its own ReadFull and takes a bare io.ErrUnexpectedEOF for
// "the last part is short": it would complete the upload with the cut
// body as the whole file.
// Put answers with that error, whatever minio-go made of it.
// The transport may still be reading it (on its own goroutine) when Put
// looks, so the error is kept atomically.
type cutBody struct {
	r   io.Reader
	cut atomic.Pointer[error]
}

func (c *cutBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err == io.ErrUnexpectedEOF {
		err = fmt.Errorf("%w: the body ended before its announced length (%v)", store.ErrShortBody, err)
		c.cut.Store(&err)
	}
	return n, err
}

// abort aborts the multipart upload id of key, also when ctx is done
// (under its own cap): what a failed upload leaves is not to stay.
func (b *Bucket) abort(ctx context.Context, key, id string) {
	ctx, cancel := b.call(context.WithoutCancel(ctx), 0)
	defer cancel()
	b.core.AbortMultipartUpload(ctx, b.bucket, key, id)
}

// fill reads r into buf until buf is full or r ends; end says r ended
// (io.EOF). Any other error is r's and is returned, io.ErrUnexpectedEOF
// included: that is how net/http reports a body cut short of its
// Content-Length, which io.ReadFull would take for "the body ended
// before buf was full" — and the cut body would be stored as the file.
func fill(r io.Reader, buf []byte) (n int, end bool, err error) {
	for n < len(buf) {
		k, err := r.Read(buf[n:])
		n += k
		if err == io.EOF {
			return n, true, nil
		}
		if err != nil {
			return n, false, err
		}
	}
	return n, false, nil
}

// slot takes one of the upload slots, or fails with ErrBusy after
// putWait; the caller calls the returned func to give it back.
func (b *Bucket) slot(ctx context.Context) (func(), error) {
	t := time.NewTimer(putWait)
	defer t.Stop()
	select {
	case b.puts <- struct{}{}:
		return func() { <-b.puts }, nil
	case <-t.C:
		return nil, ErrBusy
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// minPart is S3's smallest part but the last.
const minPart = 5 << 20

// Compose writes dst as the objects srcs joined in order, by one
// multipart upload. When every source but the last has at least 5 MiB,
// each is one part copied server-side (UploadPartCopy): no byte passes
// through hoard. Else the sources are read in order, each through
// opt.Check when set, and streamed in parts of about partSize (so at
// most one part buffer per compose). The upload completes with
// If-None-Match: * when opt.NoClobber; any failure aborts it.
func (b *Bucket) Compose(ctx context.Context, dst string, srcs []store.ObjectInfo, opt store.ObjectPut) (store.ObjectInfo, error) {
	if len(srcs) == 0 {
		return store.ObjectInfo{}, errors.New("s3: compose of nothing")
	}
	done, err := b.slot(ctx)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	defer done()
	po := minio.PutObjectOptions{UserMetadata: opt.Meta, ContentType: "application/octet-stream"}
	id, err := b.newUpload(ctx, dst, po)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	completed := false
	defer func() {
		if !completed {
			b.abort(ctx, dst, id)
		}
	}()
	server := true
	for _, s := range srcs[:len(srcs)-1] {
		server = server && s.Size >= minPart
	}
	var parts []minio.CompletePart
	if server {
		for _, s := range srcs {
			if parts, err = b.copyParts(ctx, b, s, dst, id, parts); err != nil {
				return store.ObjectInfo{}, err
			}
		}
	} else {
		for i := 0; i < len(srcs); {
			j, size := i, int64(0)
			for j < len(srcs) && (size < partSize || j == i) {
				size += srcs[j].Size
				j++
			}
			if j < len(srcs) && size < minPart {
				return store.ObjectInfo{}, fmt.Errorf("s3: compose: part of %d bytes below S3's minimum", size)
			}
			r := &joinReader{b: b, ctx: ctx, srcs: srcs[i:j], base: i, check: opt.Check}
			w := b.watched(ctx)
			w.wait()
			op, err := b.core.PutObjectPart(w.ctx, b.bucket, dst, id, len(parts)+1, w.body(r), size, minio.PutObjectPartOptions{})
			w.end()
			r.Close()
			if err := r.failure(); err != nil {
				return store.ObjectInfo{}, err
			}
			if err != nil {
				return store.ObjectInfo{}, mapCtx(w.ctx, err)
			}
			parts = append(parts, minio.CompletePart{PartNumber: op.PartNumber, ETag: op.ETag})
			i = j
		}
	}
	setConds(&po, opt)
	if err := b.complete(ctx, dst, id, parts, po); err != nil {
		return store.ObjectInfo{}, err
	}
	completed = true
	return b.Stat(ctx, dst)
}

// newUpload begins a multipart upload of key, under a call's cap.
func (b *Bucket) newUpload(ctx context.Context, key string, po minio.PutObjectOptions) (string, error) {
	if err := keyFits(key); err != nil {
		return "", err
	}
	ctx, cancel := b.call(ctx, 0)
	defer cancel()
	id, err := b.core.NewMultipartUpload(ctx, b.bucket, key, po)
	return id, mapCtx(ctx, err)
}

// complete completes the multipart upload id of key, under a call's cap
// (the store joins parts without copying them; a second per 100 parts
// more for a big one).
func (b *Bucket) complete(ctx context.Context, key, id string, parts []minio.CompletePart, po minio.PutObjectOptions) error {
	ctx, cancel := b.call(ctx, int64(len(parts))*minRate/100)
	defer cancel()
	_, err := b.core.CompleteMultipartUpload(ctx, b.bucket, key, id, parts, po)
	return mapCtx(ctx, err)
}

// setConds sets the preconditions of opt on a write: If-None-Match: *
// for NoClobber, If-Match for IfMatch.
func setConds(po *minio.PutObjectOptions, opt store.ObjectPut) {
	if opt.NoClobber {
		po.SetMatchETagExcept("*")
	}
	if opt.IfMatch != "" {
		po.SetMatchETag(opt.IfMatch)
	}
}

// maxCopyPart is S3's largest UploadPartCopy (5 GiB): a larger source is
// copied as several ranges.
const maxCopyPart = 5 << 30

// copyParts appends to parts the parts of upload id of dst that copy the
// object src of bucket from server-side: one part up to 5 GiB, else
// equal ranges of at most 5 GiB (each above 2.5 GiB, so well above S3's
// 5 MiB minimum also when more parts follow). The
// source must still be the version src describes (its ETag): else
// ErrNotFound.
func (b *Bucket) copyParts(ctx context.Context, from *Bucket, src store.ObjectInfo, dst, id string, parts []minio.CompletePart) ([]minio.CompletePart, error) {
	hdr := map[string]string{}
	if src.ETag != "" {
		hdr["x-amz-copy-source-if-match"] = `"` + src.ETag + `"`
	}
	for _, rg := range copyRanges(src.Size) {
		off, length := rg[0], rg[1]
		if off == 0 && length == src.Size {
			length = -1 // the whole object: no range (a range of an empty one is no range S3 takes)
		}
		cctx, cancel := b.call(ctx, rg[1])
		p, err := b.core.CopyObjectPart(cctx, from.bucket, src.Key, b.bucket, dst, id, len(parts)+1, off, length, hdr)
		cancel()
		if r := minio.ToErrorResponse(err); r.StatusCode == 412 || r.Code == "PreconditionFailed" {
			return nil, fmt.Errorf("%w: %s changed while it was copied", store.ErrNotFound, src.Key)
		}
		if err != nil {
			return nil, mapCtx(cctx, err)
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// copyRanges cuts an object of size bytes into the (offset, length)
// ranges of its part copies: one range up to maxCopyPart, else ranges of
// one size (the last a little shorter), so that none but the last falls
// below S3's minimum part however the size divides. An empty object is
// one empty range.
func copyRanges(size int64) [][2]int64 {
	step := size
	if k := (size + maxCopyPart - 1) / maxCopyPart; k > 1 {
		step = (size + k - 1) / k
	}
	if size == 0 {
		return [][2]int64{{0, 0}}
	}
	var out [][2]int64
	for off := int64(0); off < size; off += step {
		out = append(out, [2]int64{off, min(step, size-off)})
	}
	return out
}

// bucketOf finds the Bucket behind a store, through wrappers (a fault
// injector, a metrics layer) that offer Unwrap() store.ObjectStore.
func bucketOf(o store.ObjectStore) (*Bucket, bool) {
	for range 8 {
		switch x := o.(type) {
		case *Bucket:
			return x, true
		case interface{ Unwrap() store.ObjectStore }:
			o = x.Unwrap()
		default:
			return nil, false
		}
	}
	return nil, false
}

// Copy writes dst as a server-side copy of src, an object of the bucket
// from (this one or another on the same store): a multipart upload whose
// parts are copied by the store (UploadPartCopy, up to 5 GiB each, so
// objects of any size), completed with the preconditions of opt (S3's
// CopyObject takes no If-None-Match on its destination; a completion
// does). The source's user metadata travels unless opt.Meta is set.
// Cost: four requests (start, copy, complete, stat) plus one per 5 GiB.
func (b *Bucket) Copy(ctx context.Context, dst string, from store.ObjectStore, src store.ObjectInfo, opt store.ObjectPut) (store.ObjectInfo, error) {
	fb, ok := bucketOf(from)
	if !ok {
		return store.ObjectInfo{}, errors.New("s3: copy from a store that is not a bucket")
	}
	meta := opt.Meta
	if meta == nil {
		meta = src.Meta
	}
	done, err := b.slot(ctx)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	defer done()
	po := minio.PutObjectOptions{UserMetadata: meta, ContentType: "application/octet-stream"}
	id, err := b.newUpload(ctx, dst, po)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	completed := false
	defer func() {
		if !completed {
			b.abort(ctx, dst, id)
		}
	}()
	parts, err := b.copyParts(ctx, fb, src, dst, id, nil)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	setConds(&po, opt)
	if err := b.complete(ctx, dst, id, parts, po); err != nil {
		return store.ObjectInfo{}, err
	}
	completed = true
	return b.Stat(ctx, dst)
}

// joinReader reads objects one after another, each through check.
type joinReader struct {
	b     *Bucket
	ctx   context.Context
	srcs  []store.ObjectInfo
	base  int // index of srcs[0] among all the compose's sources
	check func(i int, r io.Reader) io.Reader
	cur   io.ReadCloser
	r     io.Reader
	err   error // a source's or check's failure, kept for the caller
	mu    sync.Mutex
}

// failure is a source's or check's failure. Read runs on the
// transport's goroutine, which may still be in it after the part's PUT
// returned with an error (net/http closes a request body in its own
// time): mu keeps Read, Close and failure apart.
func (j *joinReader) failure() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

func (j *joinReader) Read(p []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for {
		if j.err != nil {
			return 0, j.err
		}
		if j.r == nil {
			if len(j.srcs) == 0 {
				return 0, io.EOF
			}
			rc, err := j.b.Open(j.ctx, j.srcs[0])
			if err != nil {
				j.err = err
				continue
			}
			j.cur, j.r = rc, rc
			if j.check != nil {
				j.r = j.check(j.base, rc)
			}
		}
		n, err := j.r.Read(p)
		if errors.Is(err, io.EOF) {
			j.cur.Close()
			j.cur, j.r = nil, nil
			j.srcs, j.base = j.srcs[1:], j.base+1
			err = nil
		}
		if err != nil {
			j.err = err
		}
		if n > 0 || j.err != nil {
			return n, j.err
		}
	}
}

func (j *joinReader) Close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.cur != nil {
		j.cur.Close()
		j.cur, j.r = nil, nil
	}
}

// AbortUploads aborts the unfinished multipart uploads of key begun
// before before (left by a node that died while it composed or streamed
// them); younger ones may be another request's, still running.
func (b *Bucket) AbortUploads(ctx context.Context, key string, before time.Time) error {
	w := b.watched(ctx)
	defer w.end()
	ch := b.c.ListIncompleteUploads(w.ctx, b.bucket, key, false)
	for {
		w.wait()
		u, ok := <-ch
		w.done()
		if !ok {
			break
		}
		if u.Err != nil {
			return mapCtx(w.ctx, u.Err)
		}
		if u.Key != key || !u.Initiated.Before(before) {
			continue
		}
		actx, cancel := b.call(ctx, 0)
		err := b.core.AbortMultipartUpload(actx, b.bucket, u.Key, u.UploadID)
		cancel()
		if err := mapCtx(actx, err); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return ctx.Err()
}

// Uploads calls fn with every unfinished multipart upload of a key below
// prefix (at any depth). MinIO answers ListMultipartUploads with a
// prefix only for an object of exactly that name, so the bucket's whole
// list is read (page by page) and filtered here.
func (b *Bucket) Uploads(ctx context.Context, prefix string, fn func(store.ObjectUpload) error) error {
	w := b.watched(ctx)
	defer w.end()
	ch := b.c.ListIncompleteUploads(w.ctx, b.bucket, "", true)
	for {
		w.wait()
		u, ok := <-ch
		w.done()
		if !ok {
			break
		}
		if u.Err != nil {
			return mapCtx(w.ctx, u.Err)
		}
		if !strings.HasPrefix(u.Key, prefix) {
			continue
		}
		if err := fn(store.ObjectUpload{Key: u.Key, ID: u.UploadID, Initiated: u.Initiated}); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// List calls fn with each object and common prefix directly below
// prefix, with its user metadata where the store lists it (MinIO; see
// WalkMeta): a listing shows the uploader's mtime (hoard-lmod).
func (b *Bucket) List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	return b.list(ctx, minio.ListObjectsOptions{Prefix: prefix, WithMetadata: true}, func(oi minio.ObjectInfo) error { return fn(metaInfo(oi)) })
}

// Walk calls fn with every object below prefix, at any depth.
func (b *Bucket) Walk(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	return b.list(ctx, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}, func(oi minio.ObjectInfo) error { return fn(info(oi)) })
}

// list runs a listing, page by page, under a watch whose clock runs only
// while the next entry is awaited (not while fn works).
func (b *Bucket) list(ctx context.Context, lo minio.ListObjectsOptions, fn func(minio.ObjectInfo) error) error {
	if keyFits(lo.Prefix) != nil {
		return nil // no key lies below it
	}
	w := b.watched(ctx)
	defer w.end()
	ch := b.c.ListObjects(w.ctx, b.bucket, lo)
	for {
		w.wait()
		oi, ok := <-ch
		w.done()
		if !ok {
			return ctx.Err()
		}
		if oi.Err != nil {
			return mapCtx(w.ctx, oi.Err)
		}
		if err := fn(oi); err != nil {
			return err
		}
	}
}

// Delete removes the object key.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if keyFits(key) != nil {
		return nil // no such object
	}
	ctx, cancel := b.call(ctx, 0)
	defer cancel()
	return mapCtx(ctx, b.c.RemoveObject(ctx, b.bucket, key, minio.RemoveObjectOptions{}))
}

// WalkMeta is Walk with each object's user metadata, where the store
// lists it (MinIO's ListObjectsV2 extension metadata=true; others ignore
// the parameter): an object listed without it has Meta nil.
func (b *Bucket) WalkMeta(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	return b.list(ctx, minio.ListObjectsOptions{Prefix: prefix, Recursive: true, WithMetadata: true}, func(oi minio.ObjectInfo) error {
		return fn(metaInfo(oi))
	})
}

// metaInfo is info for a listing asked for metadata: Meta nil when the
// store did not list it.
func metaInfo(oi minio.ObjectInfo) store.ObjectInfo {
	si := info(oi)
	si.Meta = nil
	if oi.UserMetadata != nil {
		si.Meta = map[string]string{}
		for k, v := range oi.UserMetadataStripped {
			si.Meta[strings.ToLower(k)] = v
		}
	}
	return si
}

// NewUpload begins a multipart upload of key carrying meta (the object's
// metadata is set when an upload begins, not when it completes).
func (b *Bucket) NewUpload(ctx context.Context, key string, meta map[string]string) (string, error) {
	return b.newUpload(ctx, key, minio.PutObjectOptions{UserMetadata: meta, ContentType: "application/octet-stream"})
}

// PutPart streams exactly size bytes of r into part n of the upload id
// of key, without a part buffer: the part is stored only when r gave
// all of them (an error from r cuts the request, and the store keeps
// nothing of it). Like Put, it is not cancelled with the request (a
// half-closed client's body is whole), and keeps a call's cap.
func (b *Bucket) PutPart(ctx context.Context, key, id string, n int, r io.Reader, size int64) (store.ObjectPart, error) {
	done, err := b.slot(ctx)
	if err != nil {
		return store.ObjectPart{}, err
	}
	defer done()
	cb := &cutBody{r: r}
	w := b.watched(context.WithoutCancel(ctx))
	defer w.end()
	w.wait()
	p, err := b.core.PutObjectPart(w.ctx, b.bucket, key, id, n, w.body(cb), size, minio.PutObjectPartOptions{})
	w.done()
	if cut := cb.cut.Load(); cut != nil {
		return store.ObjectPart{}, *cut
	}
	if err != nil {
		return store.ObjectPart{}, mapCtx(w.ctx, err)
	}
	return store.ObjectPart{Number: n, Size: size, ETag: strings.Trim(p.ETag, `"`), ModTime: time.Now()}, nil
}

// ComposePart writes part n of the upload id of key as srcs joined: a
// single source by UploadPartCopy (server-side; up to 5 GiB), several
// streamed through hoard in order, each through check when set.
func (b *Bucket) ComposePart(ctx context.Context, key, id string, n int, srcs []store.ObjectInfo, check func(i int, r io.Reader) io.Reader) (store.ObjectPart, error) {
	var size int64
	for _, s := range srcs {
		size += s.Size
	}
	if len(srcs) == 1 && size > 0 && size <= maxCopyPart {
		hdr := map[string]string{}
		if srcs[0].ETag != "" {
			hdr["x-amz-copy-source-if-match"] = `"` + srcs[0].ETag + `"`
		}
		cctx, cancel := b.call(ctx, size)
		p, err := b.core.CopyObjectPart(cctx, b.bucket, srcs[0].Key, b.bucket, key, id, n, 0, -1, hdr)
		cancel()
		if r := minio.ToErrorResponse(err); r.StatusCode == 412 || r.Code == "PreconditionFailed" {
			return store.ObjectPart{}, fmt.Errorf("%w: %s changed while it was copied", store.ErrNotFound, srcs[0].Key)
		}
		if err != nil {
			return store.ObjectPart{}, mapCtx(cctx, err)
		}
		return store.ObjectPart{Number: n, Size: size, ETag: strings.Trim(p.ETag, `"`), ModTime: time.Now()}, nil
	}
	done, err := b.slot(ctx)
	if err != nil {
		return store.ObjectPart{}, err
	}
	defer done()
	r := &joinReader{b: b, ctx: ctx, srcs: srcs, check: check}
	w := b.watched(ctx)
	w.wait()
	op, err := b.core.PutObjectPart(w.ctx, b.bucket, key, id, n, w.body(r), size, minio.PutObjectPartOptions{})
	w.end()
	r.Close()
	if err := r.failure(); err != nil {
		return store.ObjectPart{}, err
	}
	if err != nil {
		return store.ObjectPart{}, mapCtx(w.ctx, err)
	}
	return store.ObjectPart{Number: n, Size: size, ETag: strings.Trim(op.ETag, `"`), ModTime: time.Now()}, nil
}

// Parts lists the parts of the upload id of key, page by page.
func (b *Bucket) Parts(ctx context.Context, key, id string) ([]store.ObjectPart, error) {
	var out []store.ObjectPart
	marker := 0
	for {
		cctx, cancel := b.call(ctx, 0)
		res, err := b.core.ListObjectParts(cctx, b.bucket, key, id, marker, 1000)
		cancel()
		if err != nil {
			return nil, mapCtx(cctx, err)
		}
		for _, p := range res.ObjectParts {
			out = append(out, store.ObjectPart{Number: p.PartNumber, Size: p.Size, ETag: strings.Trim(p.ETag, `"`), ModTime: p.LastModified})
		}
		if !res.IsTruncated || res.NextPartNumberMarker <= marker {
			return out, nil
		}
		marker = res.NextPartNumberMarker
	}
}

// Complete joins parts into key. A part that is not (or no longer) the
// one listed, or an upload that is gone, is ErrNotFound.
func (b *Bucket) Complete(ctx context.Context, key, id string, parts []store.ObjectPart, opt store.ObjectPut) (store.ObjectInfo, error) {
	cp := make([]minio.CompletePart, len(parts))
	for i, p := range parts {
		cp[i] = minio.CompletePart{PartNumber: p.Number, ETag: p.ETag}
	}
	var po minio.PutObjectOptions
	setConds(&po, opt)
	cctx, cancel := b.call(ctx, int64(len(parts))*minRate/100)
	_, err := b.core.CompleteMultipartUpload(cctx, b.bucket, key, id, cp, po)
	cancel()
	if r := minio.ToErrorResponse(err); r.Code == "InvalidPart" || r.Code == "InvalidPartOrder" {
		return store.ObjectInfo{}, fmt.Errorf("%w: a part of the upload changed: %v", store.ErrNotFound, err)
	}
	if err != nil {
		return store.ObjectInfo{}, mapCtx(cctx, err)
	}
	return b.Stat(ctx, key)
}

// AbortUpload aborts the upload id of key; a missing one is no error.
func (b *Bucket) AbortUpload(ctx context.Context, key, id string) error {
	ctx, cancel := b.call(ctx, 0)
	defer cancel()
	err := mapCtx(ctx, b.core.AbortMultipartUpload(ctx, b.bucket, key, id))
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}
