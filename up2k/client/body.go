package client

import (
	"io"
	"os"
	"runtime"
	"strconv"
	"syscall"
)

// minSendfile is the least a post's body must hold to be given its own
// file description (an open and two fstats): below it the copy through
// the process costs less than the setup.
const minSendfile = 256 << 10

// chunkBody is the body of a post of bytes [off, off+n) of f.
//
// Where it can, it is a file description of its own on f's inode,
// positioned at off: net/http's transport then hands the bytes to
// sendfile(2) (net.TCPConn.ReadFrom is given an *io.LimitedReader over an
// *os.File), so they go from the page cache to the socket without being
// read into the process and written out again. A big upload is bound by
// CPU, and that copy was a tenth of the client's (bench/u2c.sh big). The
// description is opened through /proc/self/fd, not by name, so it is
// the file that was hashed even if the name now points elsewhere (a
// change is caught as before: before a retry, and by the server's hash).
// The transport closes it when the post is done.
//
// The transport reads on after Content-Length to see whether the body is
// longer (and fails the request if it is); the description may go on to
// the end of the file, so its Read stops at off+n by the file offset,
// which sendfile moves too. Elsewhere (no /proc),
// or for small bodies, it is a SectionReader over f; over TLS the
// transport reads either one.
func chunkBody(f *os.File, off, n int64) io.Reader {
	if n >= minSendfile && runtime.GOOS == "linux" {
		if g := reopen(f); g != nil {
			if _, err := g.Seek(off, io.SeekStart); err == nil {
				return &fileRange{f: g, end: off + n}
			}
			g.Close()
		}
	}
	return io.NewSectionReader(f, off, n)
}

// reopen opens f's inode anew, read-only, with an offset of its own; nil
// when it cannot, or when what it opened is not f's file.
func reopen(f *os.File) *os.File {
	sc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var fd uintptr
	if sc.Control(func(d uintptr) { fd = d }) != nil {
		return nil
	}
	g, err := os.Open("/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10))
	if err != nil {
		return nil
	}
	a, err1 := f.Stat()
	b, err2 := g.Stat()
	if err1 != nil || err2 != nil || !os.SameFile(a, b) {
		g.Close()
		return nil
	}
	return g
}

// fileRange is the part of a file from its description's offset up to
// end, for chunkBody.
type fileRange struct {
	f   *os.File
	end int64
}

func (r *fileRange) Read(p []byte) (int, error) {
	pos, err := r.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	if pos >= r.end {
		return 0, io.EOF
	}
	if int64(len(p)) > r.end-pos {
		p = p[:r.end-pos]
	}
	return r.f.Read(p)
}

func (r *fileRange) Close() error { return r.f.Close() }

// SyscallConn is what lets net's sendfile take the body (within the
// transport's limit of Content-Length bytes).
func (r *fileRange) SyscallConn() (syscall.RawConn, error) { return r.f.SyscallConn() }
