package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// WebDAV scenarios: PROPFIND Depth 1 of a folder of -dav-n entries,
// MOVE and DELETE of -dav-n small files (one request each, -c
// connections), and rclone sync of -sync-n small files (rclone's webdav
// remote, configured by flags, its pacer lifted: see rcloneSync). The
// folders are written straight to disk (untimed) below the target's
// upload folder, which every target serves.
// A target that answers a method 405 or 501 is reported unsupported
// (nginx's dav module has no PROPFIND, so no rclone either).

// davFolder writes n files of size bytes into a fresh upload folder.
func davFolder(e *env, what string, n, size int) (rel, abs string, err error) {
	rel, abs, err = e.fx.upDir(e.t, what, e.round)
	if err != nil {
		return "", "", err
	}
	body := bytes.Repeat([]byte("d"), size)
	for i := range n {
		if err := os.WriteFile(filepath.Join(abs, fmt.Sprintf("f%06d.bin", i)), body, 0o666); err != nil {
			return "", "", err
		}
	}
	return rel, abs, nil
}

// dav sends one WebDAV request and reads its body (up to max bytes kept).
func (e *env) dav(ctx context.Context, method, u string, hdr map[string]string, body string, keep int64) (int, []byte, int64, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, 0, err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := e.t.client().Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	defer resp.Body.Close()
	var kept bytes.Buffer
	n, err := io.Copy(io.MultiWriter(&limitWriter{w: &kept, n: keep}, io.Discard), resp.Body)
	if resp.StatusCode == 405 || resp.StatusCode == 501 {
		return resp.StatusCode, kept.Bytes(), n, unsupportedf("%s answered %s", method, resp.Status)
	}
	return resp.StatusCode, kept.Bytes(), n, err
}

type limitWriter struct {
	w io.Writer
	n int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(int64(len(p)), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

func davPropfind(e *env) ([]figure, error) {
	n := e.c.davN
	rel, _, err := davFolder(e, "propfind", n, 16)
	if err != nil {
		return nil, err
	}
	u := e.url(rel) + "/"
	body := `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:resourcetype/><D:getcontentlength/><D:getlastmodified/><D:getetag/></D:prop></D:propfind>`
	hdr := map[string]string{"Depth": "1", "Content-Type": "application/xml"}
	// One untimed request checks the answer: n+1 responses.
	code, b, size, err := e.dav(e.ctx, "PROPFIND", u, hdr, body, 1<<30)
	if err != nil {
		return nil, err
	}
	if code != http.StatusMultiStatus {
		return nil, fmt.Errorf("PROPFIND: status %d: %s", code, clipBytes(b))
	}
	if got := bytes.Count(b, []byte("response>")) / 2; got != n+1 {
		return nil, fmt.Errorf("PROPFIND listed %d entries, want %d", got, n+1)
	}
	st, err := load(e, 1, false, func(ctx context.Context, w, i int, moved *atomic.Int64) error {
		code, b, n, err := e.dav(ctx, "PROPFIND", u, hdr, body, 512)
		moved.Add(n)
		if err == nil && code != http.StatusMultiStatus {
			err = fmt.Errorf("PROPFIND: status %d: %s", code, clipBytes(b))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return []figure{
		{Name: fmt.Sprintf("Depth 1 of %d entries", n), Unit: "listings/s", Value: st.perSec(st.ops)},
		{Name: "body of one listing", Unit: "KiB", Value: float64(size) / 1024, Lower: true},
		{Name: "latency p50", Unit: "ms", Value: st.pct(50), Lower: true},
	}, nil
}

func davMoveDelete(e *env) ([]figure, error) {
	n := e.c.davN
	rel, abs, err := davFolder(e, "movedel", n, 64)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(abs)
	if err := os.Mkdir(filepath.Join(abs, "to"), 0o777); err != nil {
		return nil, err
	}
	os.Chmod(filepath.Join(abs, "to"), 0o777)
	run := func(method string, dest bool) (time.Duration, error) {
		var next atomic.Int64
		errs := make(chan error, e.c.conns)
		t0 := time.Now()
		e.m.start()
		defer e.m.stop()
		for range e.c.conns {
			go func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= n {
						errs <- nil
						return
					}
					name := fmt.Sprintf("f%06d.bin", i)
					u, hdr := e.url(rel+"/"+name), map[string]string{}
					if dest {
						hdr["Destination"] = e.url(rel + "/to/" + name)
						hdr["Overwrite"] = "F"
					} else {
						u = e.url(rel + "/to/" + name)
					}
					code, b, _, err := e.dav(e.ctx, method, u, hdr, "", 512)
					if err == nil && (code < 200 || code > 299) {
						err = fmt.Errorf("%s %s: status %d: %s", method, name, code, clipBytes(b))
					}
					if err != nil {
						next.Store(int64(n))
						errs <- err
						return
					}
				}
			}()
		}
		var first error
		for range e.c.conns {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		return time.Since(t0), first
	}
	mv, err := run("MOVE", true)
	if err != nil {
		return nil, err
	}
	del, err := run("DELETE", false)
	if err != nil {
		return nil, err
	}
	if left, _ := os.ReadDir(filepath.Join(abs, "to")); len(left) != 0 {
		return nil, fmt.Errorf("%d files left after DELETE", len(left))
	}
	return []figure{
		{Name: fmt.Sprintf("MOVE %d files, %d conns", n, e.c.conns), Unit: "files/s", Value: float64(n) / mv.Seconds()},
		{Name: fmt.Sprintf("DELETE %d files, %d conns", n, e.c.conns), Unit: "files/s", Value: float64(n) / del.Seconds()},
	}, nil
}

func rcloneSync(e *env) ([]figure, error) {
	rc, err := exec.LookPath("rclone")
	if err != nil {
		return nil, unsupportedf("rclone is not installed")
	}
	// rclone's webdav backend starts each call at least 10 ms after the
	// previous one (its pacer's minSleep), whatever the server: three
	// calls per file (MKCOL of the folder, PUT, PROPFIND) cap a sync at
	// about 33 files/s against hoard, copyparty or rclone's own server
	// alike. From rclone 1.63 --webdav-pacer-min-sleep lifts the cap;
	// before it, the figure measures rclone, not the server, and its
	// name says so.
	flags, _ := exec.CommandContext(e.ctx, rc, "help", "flags", "webdav").CombinedOutput()
	paced := !bytes.Contains(flags, []byte("--webdav-pacer-min-sleep"))
	// Does the target list folders at all?
	if _, _, _, err := e.dav(e.ctx, "PROPFIND", e.url("")+"/", map[string]string{"Depth": "0"}, "", 0); err != nil {
		return nil, err
	}
	src, err := os.MkdirTemp("", "hoard-bench-rclone-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(src)
	body := bytes.Repeat([]byte("r"), e.c.smallSize)
	for i := range e.c.syncN {
		d := filepath.Join(src, fmt.Sprintf("d%02d", i%50))
		os.MkdirAll(d, 0o755)
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.bin", i)), body, 0o644); err != nil {
			return nil, err
		}
	}
	rel, abs, err := e.fx.upDir(e.t, "rclone", e.round)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(abs)
	args := []string{"sync", src, ":webdav:" + rel, "--config", filepath.Join(src, "none.conf"),
		"--webdav-url", e.url("") + "/", "--webdav-vendor", "owncloud", "--transfers", fmt.Sprint(min(e.c.conns, 16)), "--checkers", "16", "-q"}
	if !paced {
		args = append(args, "--webdav-pacer-min-sleep", "0s")
	}
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, rc, args...)
	t0 := time.Now()
	e.m.start()
	out, err := cmd.CombinedOutput()
	e.m.stop()
	dt := time.Since(t0)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("rclone sync: %v: %s", err, clipBytes(out))
		}
		return nil, err
	}
	var files int
	filepath.WalkDir(abs, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files++
		}
		return nil
	})
	if files != e.c.syncN {
		return nil, fmt.Errorf("rclone sync left %d files on the server, want %d", files, e.c.syncN)
	}
	name := fmt.Sprintf("%d x %d B files, up", e.c.syncN, e.c.smallSize)
	if paced {
		name += " (rclone < 1.63: paced to ~33 files/s on any server)"
	}
	return []figure{{Name: name, Unit: "files/s", Value: float64(e.c.syncN) / dt.Seconds()}}, nil
}
