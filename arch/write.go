package arch

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
)

// ErrChanged means a file's size changed while it was being archived. The
// archive cannot be finished truthfully, so the caller must cut the
// transfer rather than end it normally.
var ErrChanged = errors.New("arch: a file changed size while it was being archived")

// Transform replaces an entry by a derived form (a transcode, thumbnail or
// waveform) for the archive modifiers opus, mp3, j, w and p. The media
// package provides it; arch only calls it.
//
// It gets the entry's archive name, the open file and its FileInfo, and the
// modifier. ok=false (with a nil error) keeps the original file, which is
// also what a failed conversion should do (copyparty keeps the original).
// Otherwise it returns the new archive name (the extension changed, e.g.
// ".opus"), the content and its exact size; arch closes r.
type Transform func(ctx context.Context, name string, f *os.File, fi fs.FileInfo, mod string) (newName string, r io.ReadCloser, size int64, ok bool, err error)

// Options tune Write.
type Options struct {
	// Transform serves Format.Mod; Write fails if Mod is set and this is nil.
	Transform Transform
	// SendfileMin is the size from which an uncompressed tar hands a file
	// body to w's ReadFrom (sendfile(2) on a TCP response) instead of
	// copying it through the buffer. 0 means 64 KiB.
	SendfileMin int64
}

// bufSize is the write buffer between the archive and its destination:
// small files and headers gather into writes this large.
const bufSize = 64 << 10

// bufWriters are the archives' output buffers: one per archive was a
// tenth of the bytes a tar of 1000 small files allocates.
var bufWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, bufSize) }}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// Size returns the exact length in bytes of the archive Write produces for
// files, for formats that are Sized (uncompressed, no modifier).
func Size(f Format, files []File) (int64, error) {
	if !f.Sized() {
		return 0, fmt.Errorf("arch: the length of a %s archive is not known beforehand", f.Ext())
	}
	return write(context.Background(), io.Discard, f, files, Options{}, true)
}

// Write writes the archive of files to w in format f. It stops at the first
// error, leaving the archive unfinished: ErrChanged when a file changed
// size, the context's error when ctx ends, or a read or write error.
func Write(ctx context.Context, w io.Writer, f Format, files []File, opt Options) error {
	if f.Mod != "" && opt.Transform == nil {
		return fmt.Errorf("arch: modifier %q needs a Transform", f.Mod)
	}
	_, err := write(ctx, w, f, files, opt, false)
	return err
}

// write writes the archive and returns its length. With dry set it opens
// no file and writes headers only, counting bodies by their sizes.
func write(ctx context.Context, w io.Writer, f Format, files []File, opt Options, dry bool) (n int64, err error) {
	var raw io.Writer = w // where file bodies may go by ReadFrom
	var enc io.WriteCloser
	if f.Codec != "" && !dry {
		ectx, cancel := context.WithCancel(ctx)
		defer cancel()
		enc, err = NewStreamEncoder(ectx, f.Codec, f.Level, w)
		if err != nil {
			return 0, err
		}
		defer func() {
			if err != nil {
				cancel() // an unfinished archive must not get a proper end
			}
			if cerr := enc.Close(); err == nil {
				err = cerr
			}
		}()
		w, raw = enc, nil
	}
	bw := bufWriters.Get().(*bufio.Writer)
	bw.Reset(w)
	defer func() {
		bw.Reset(nil)
		bufWriters.Put(bw)
	}()
	aw := &archiveWriter{ctx: ctx, bw: bw, raw: raw, f: f, opt: opt, dry: dry}
	defer aw.open.close()
	if aw.opt.SendfileMin <= 0 {
		aw.opt.SendfileMin = 64 << 10
	}
	if !dry && f.Mod == "" {
		pctx, stop := context.WithCancel(ctx)
		aw.ahead = prefetch(pctx, files, aw.opt.SendfileMin)
		defer func() {
			stop()
			aw.ahead.drain()
		}()
	}
	for i := range files {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if err := aw.add(&files[i]); err != nil {
			return 0, err
		}
	}
	if f.Zip {
		err = aw.zipEnd()
	} else {
		err = aw.tarEnd()
	}
	if err != nil {
		return 0, err
	}
	return aw.off, bw.Flush()
}

type archiveWriter struct {
	ctx context.Context
	bw  *bufio.Writer
	raw io.Writer // nil when compressing
	f   Format
	opt Options
	dry bool      // count only: no file is opened
	off int64     // bytes of archive written
	cd  []cdEntry // zip: central directory, written at the end
	// ahead delivers small files read in advance, one result per file
	// on disk, in order (nil when not prefetching).
	ahead *prefetcher
	open  opener // for the files not read ahead
	hdr   bytes.Buffer
	blk   [512]byte // a header made without archive/tar
}

func (a *archiveWriter) write(p []byte) error {
	n, err := a.bw.Write(p)
	a.off += int64(n)
	return err
}

// entry is what gets written for one File: its name, size and content.
type entry struct {
	name    string
	size    int64
	file    *os.File  // when the body is the file itself
	r       io.Reader // otherwise
	data    []byte    // or this, whole
	checked bool      // the body's last read proved the file no longer
}

func (a *archiveWriter) add(fl *File) error {
	e := entry{name: fl.Name, size: fl.Size}
	if a.dry {
		return a.addEntry(fl, &e)
	}
	if fl.data != nil || fl.Vol == nil {
		e.data = fl.data
		return a.addEntry(fl, &e)
	}
	if fl.Vol.Remote() {
		return a.addObject(fl, &e) // objects.go
	}
	if a.ahead != nil {
		r, ok := a.ahead.next()
		if !ok {
			return a.ctx.Err()
		}
		defer r.free()
		if r.err != nil {
			return r.err
		}
		if r.bb != nil {
			e.data = r.data
			return a.addEntry(fl, &e)
		}
	}
	file, fi, err := a.open.open(fl)
	if err != nil {
		return fmt.Errorf("arch: %s: %w", fl.Name, err)
	}
	defer file.Close()
	if fi.Size() != fl.Size {
		return fmt.Errorf("%w: %s was %d bytes, now %d", ErrChanged, fl.Name, fl.Size, fi.Size())
	}
	e.file = file
	if a.f.Mod != "" {
		name, r, size, ok, err := a.opt.Transform(a.ctx, fl.Name, file, fi, a.f.Mod)
		if err != nil {
			return err
		}
		if ok {
			defer r.Close()
			e.name, e.size, e.file, e.r = name, size, nil, r
			return a.addEntry(fl, &e)
		}
	}
	if err := a.addEntry(fl, &e); err != nil {
		return err
	}
	// The body was read to its announced size; a file that grew (or was
	// rewritten) meanwhile would make the archive a lie.
	if e.file != nil && !e.checked {
		if fi, err := e.file.Stat(); err != nil || fi.Size() != fl.Size {
			return fmt.Errorf("%w: %s", ErrChanged, fl.Name)
		}
	}
	return nil
}

func (a *archiveWriter) addEntry(fl *File, e *entry) error {
	if a.f.Zip {
		return a.zipEntry(fl, e)
	}
	return a.tarEntry(fl, e)
}

// body copies e's content: exactly e.size bytes, through crc when it is
// not nil. Large file bodies of an uncompressed tar go to the destination's
// ReadFrom with the *os.File (sendfile(2) when that is a TCP response).
func (a *archiveWriter) body(e *entry, crc *uint32) error {
	if a.dry {
		a.off += e.size
		return nil
	}
	if e.size == 0 {
		return nil
	}
	if e.data != nil {
		if crc != nil {
			*crc = crc32.Update(*crc, crc32.IEEETable, e.data)
		}
		return a.write(e.data)
	}
	if crc == nil && e.file != nil && a.raw != nil && e.size >= a.opt.SendfileMin {
		if rf, ok := a.raw.(io.ReaderFrom); ok {
			if err := a.bw.Flush(); err != nil {
				return err
			}
			n, err := rf.ReadFrom(&io.LimitedReader{R: e.file, N: e.size})
			a.off += n
			if err != nil {
				return err
			}
			if n != e.size {
				return fmt.Errorf("%w: %s ended at %d of %d bytes", ErrChanged, e.name, n, e.size)
			}
			return nil
		}
	}
	src := e.r
	if e.file != nil {
		src = e.file
	}
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	left := e.size
	for left > 0 {
		if err := a.ctx.Err(); err != nil {
			return err
		}
		p := buf
		if int64(len(p)) > left {
			p = p[:left]
		}
		var n int
		var err error
		if e.file != nil && int64(len(buf)) > left {
			// The last read asks for one byte more than is left: a
			// file that grew says so here, without a stat.
			n, err = io.ReadAtLeast(e.file, buf[:left+1], int(left))
			if int64(n) > left {
				return fmt.Errorf("%w: %s grew past %d bytes", ErrChanged, e.name, e.size)
			}
			e.checked = true
		} else {
			n, err = io.ReadFull(src, p)
		}
		if n > 0 {
			p = buf[:n]
			if crc != nil {
				*crc = crc32.Update(*crc, crc32.IEEETable, p[:n])
			}
			if werr := a.write(p[:n]); werr != nil {
				return werr
			}
			left -= int64(n)
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("%w: %s ended at %d of %d bytes", ErrChanged, e.name, e.size-left, e.size)
			}
			return err
		}
	}
	return nil
}

// --- tar -------------------------------------------------------------------

func (a *archiveWriter) tarEntry(fl *File, e *entry) error {
	if !a.f.Pax {
		if gnuHeader(&a.blk, e.name, e.size, fl.Mode, fl.Mtime.Unix()) {
			return a.tarFinish(e, a.blk[:])
		}
	}
	h := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     e.name,
		Size:     e.size,
		Mode:     int64(fl.Mode),
		ModTime:  fl.Mtime,
		Format:   tar.FormatGNU,
	}
	if a.f.Pax {
		h.Format = tar.FormatPAX
	} else {
		h.ModTime = h.ModTime.Truncate(1e9) // GNU tar keeps whole seconds
	}
	// archive/tar writes the header blocks (with a GNU long-name entry or
	// a pax record when needed) into a small buffer; the body is ours to
	// send, so the writer is dropped before it expects one.
	a.hdr.Reset()
	if err := tar.NewWriter(&a.hdr).WriteHeader(h); err != nil {
		return fmt.Errorf("arch: %s: %w", e.name, err)
	}
	return a.tarFinish(e, a.hdr.Bytes())
}

// tarFinish writes an entry's header blocks, its body and the padding.
func (a *archiveWriter) tarFinish(e *entry, hdr []byte) error {
	if err := a.write(hdr); err != nil {
		return err
	}
	if err := a.body(e, nil); err != nil {
		return err
	}
	if pad := (512 - e.size%512) % 512; pad > 0 {
		return a.write(zeros[:pad])
	}
	return nil
}

var zeros [10240]byte

// tarEnd writes two zero blocks and pads the archive to a whole 10240-byte
// record, as tar(1) does.
func (a *archiveWriter) tarEnd() error {
	if err := a.write(zeros[:1024]); err != nil {
		return err
	}
	if pad := (10240 - a.off%10240) % 10240; pad > 0 {
		return a.write(zeros[:pad])
	}
	return nil
}

// Small files cost more in system calls (open, read, close) than in
// bytes, so a few goroutines open and read them ahead while the archive is
// being written. The files on disk are cut into batches of consecutive
// files (at most aheadBatch files and about aheadBytes of small ones);
// batch b goes to reader b % aheadReaders, whose batches come in order on
// its own channel; add takes them round-robin, so the order of the
// archive is kept. One channel operation per batch rather than per file
// spares most of the goroutine wake-ups, which cost as much as the reads
// on a virtual machine.

// aheadBatch and aheadBytes bound a batch; each reader has at most two
// made (one waiting in its channel), so about 4 × 256 KiB of files are
// held ahead with two readers. aheadReaders is one per core, at most 4.
const (
	aheadBatch = 64
	aheadBytes = 256 << 10
)

var aheadReaders = min(4, runtime.GOMAXPROCS(0))

type ahead struct {
	data []byte    // the file's bytes; nil: open it in turn
	bb   *batchBuf // holds data
	err  error
}

func (r ahead) free() {
	if r.bb != nil && r.bb.refs.Add(-1) == 0 {
		putBatchBuf(r.bb)
	}
}

// A batch's small files are read into one buffer (room for each file and
// one byte more), back in the pool once the last of them is written. A
// buffer per file held 64 KiB for every 4 KiB file (4 MiB per batch, some
// 24 MiB of the peak RSS of a tar of many small files); buffers by size
// class, tried first, cost a tenth of the files per second (the smaller
// heap collected the pools more often).
type batchBuf struct {
	b    []byte
	refs atomic.Int32 // files of the batch not yet freed
}

// batchMax is the most a batch's files take: aheadBytes, passed by at most
// one file under 64 KiB, and the spare byte of each.
const batchMax = aheadBytes + 64<<10 + aheadBatch

// batchFree keeps up to eight batch buffers (2.6 MiB) between archives:
// a free list, not a sync.Pool, which every collection empties (under a
// tar of small files that was every 70 ms, and the refills cost 10 % of
// the files per second).
var batchFree = make(chan *batchBuf, 8)

func getBatchBuf() *batchBuf {
	select {
	case bb := <-batchFree:
		return bb
	default:
		return &batchBuf{b: make([]byte, batchMax)}
	}
}

func putBatchBuf(bb *batchBuf) {
	select {
	case batchFree <- bb:
	default:
	}
}

type prefetcher struct {
	chans []chan []ahead
	cur   []ahead // the batch being taken
	i     int     // next in cur
	b     int     // batches taken so far
}

// next returns the result for the next file on disk; ok is false when
// the readers stopped (the context ended).
func (p *prefetcher) next() (ahead, bool) {
	for p.i >= len(p.cur) {
		batch, ok := <-p.chans[p.b%len(p.chans)]
		if !ok {
			return ahead{}, false
		}
		p.b++
		p.cur, p.i = batch, 0
	}
	r := p.cur[p.i]
	p.cur[p.i] = ahead{}
	p.i++
	return r, true
}

// drain waits until every reader has stopped and no file is open.
func (p *prefetcher) drain() {
	free := func(batch []ahead) {
		for _, r := range batch {
			r.free()
		}
	}
	free(p.cur[p.i:])
	for _, c := range p.chans {
		for batch := range c {
			free(batch)
		}
	}
}

// prefetch starts the readers: every file smaller than limit is read
// whole; for the others an empty result keeps the turns in step.
func prefetch(ctx context.Context, files []File, limit int64) *prefetcher {
	limit = min(limit, 64<<10)
	var disk []int // files on disk (add asks for no generated one)
	cuts := []int{0}
	n, bytes := 0, int64(0)
	for i := range files {
		fl := &files[i]
		if fl.Vol == nil || fl.data != nil || fl.Vol.Remote() {
			continue // generated, or an object (read in turn: objects.go)
		}
		disk = append(disk, i)
		n++
		if fl.Size < limit {
			bytes += fl.Size
		}
		if n == aheadBatch || bytes >= aheadBytes {
			cuts = append(cuts, len(disk))
			n, bytes = 0, 0
		}
	}
	if n > 0 {
		cuts = append(cuts, len(disk))
	}
	p := &prefetcher{}
	for w := range aheadReaders {
		c := make(chan []ahead, 1)
		p.chans = append(p.chans, c)
		go func() {
			defer close(c)
			var o opener
			defer o.close()
			for b := w; b+1 < len(cuts); b += aheadReaders {
				batch := make([]ahead, 0, cuts[b+1]-cuts[b])
				var bb *batchBuf
				off := 0
				for _, i := range disk[cuts[b]:cuts[b+1]] {
					var r ahead
					if n := int(files[i].Size) + 1; files[i].Size < limit && ctx.Err() == nil && off+n <= batchMax {
						if bb == nil {
							bb = getBatchBuf()
						}
						r = readSmall(&o, &files[i], bb.b[off:off+n:off+n])
						if r.err == nil {
							off += n
							r.bb = bb
							bb.refs.Add(1)
						}
					}
					batch = append(batch, r)
				}
				if bb != nil && bb.refs.Load() == 0 {
					putBatchBuf(bb) // no file read into it
				}
				select {
				case c <- batch:
				case <-ctx.Done():
					for _, r := range batch {
						r.free()
					}
					return
				}
			}
		}()
	}
	return p
}

// readSmall reads a whole small file into b (its size and one byte
// more, so that a file that grew is caught).
func readSmall(o *opener, fl *File, b []byte) ahead {
	n, err := o.read(fl, b, max(int(fl.Size), 1))
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return ahead{err: fmt.Errorf("arch: %s: %w", fl.Name, err)}
	}
	if n != int(fl.Size) {
		return ahead{err: fmt.Errorf("%w: %s read %d bytes of %d", ErrChanged, fl.Name, n, fl.Size)}
	}
	return ahead{data: b[:n]}
}
