package arch

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
)

// Archives compress with the fastest route measured on the reference
// machine (2 cores; bench/RESULTS.md "Archives" has the figures):
//
//   - gz: klauspost/compress in process. At level 3 it beats gzip(1) by
//     about 3× and pigz on two cores as well, so no tool is needed.
//   - xz: the system xz -T0 when installed (multi-threaded, and faster
//     than ulikunitz/xz on one core too), else ulikunitz/xz.
//   - bz2: the system bzip2 when installed (about 1.5× dsnet/compress),
//     else dsnet/compress.
//
// The tools read the tar stream on stdin and write to the destination on
// stdout; the command dies with the context.

var (
	toolsOnce sync.Once
	tools     map[Codec]string
)

func tool(c Codec) string {
	toolsOnce.Do(func() {
		tools = map[Codec]string{}
		for c, name := range map[Codec]string{XZ: "xz", Bzip2: "bzip2"} {
			if p, err := exec.LookPath(name); err == nil {
				tools[c] = p
			}
		}
	})
	return tools[c]
}

// Route names how c is compressed here: the tool's path or "library".
func Route(c Codec) string {
	if p := tool(c); p != "" {
		return p
	}
	return "library"
}

// NewStreamEncoder is NewEncoder for archives: it prefers the faster
// system tool (see above) and stops when ctx ends. Close waits for the
// tool to finish writing into w.
func NewStreamEncoder(ctx context.Context, c Codec, level int, w io.Writer) (io.WriteCloser, error) {
	if err := CheckLevel(c, level); err != nil {
		return nil, err
	}
	p := tool(c)
	if p == "" {
		return NewEncoder(c, level, w)
	}
	args := []string{"-c", "-" + strconv.Itoa(level)}
	if c == XZ {
		args = append(args, "-T0")
	}
	cmd := exec.CommandContext(ctx, p, args...)
	cmd.Stdout = w
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return NewEncoder(c, level, w) // the tool is gone: the library still works
	}
	return &cmdEncoder{cmd: cmd, in: in, ctx: ctx}, nil
}

type cmdEncoder struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	ctx context.Context
}

func (e *cmdEncoder) Write(p []byte) (int, error) {
	n, err := e.in.Write(p)
	if err != nil {
		if cerr := e.ctx.Err(); cerr != nil {
			return n, cerr
		}
	}
	return n, err
}

func (e *cmdEncoder) Close() error {
	e.in.Close()
	if err := e.cmd.Wait(); err != nil {
		if cerr := e.ctx.Err(); cerr != nil {
			return cerr
		}
		return fmt.Errorf("arch: %s: %w", e.cmd.Path, err)
	}
	return nil
}
