package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"strings"
	"syscall"
	"time"

	"hoard/up2k/client"
)

const upUsage = `usage: hoard up [flags] URL PATH...

Uploads files and folders to a hoard (or copyparty) server with the
resumable up2k protocol; running it again resumes. "dir" goes into
URL/dir/, "dir/" puts dir's content into URL/.

flags (u2c.py's names):
`

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// runUp is `hoard up`: 0 all done, 1 some files failed, 2 usage.
func runUp(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hoard up", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		o                  client.Options
		xs, incl, excl     stringList
		te, cacert, pw     string
		jsonOut, quiet, ns bool
		sz, every          int
	)
	fs.StringVar(&pw, "a", "", "password (or $FILE to read it from FILE; default: env HOARD_PW)")
	fs.IntVar(&o.Jobs, "j", 8, "parallel connections sending chunks")
	fs.IntVar(&o.Handshakes, "hs", 0, "files handshaking at once (default max(16, 4 × -j))")
	fs.IntVar(&sz, "sz", 64, "stitch consecutive chunks into POSTs of about this many MiB")
	fs.BoolVar(&o.Overwrite, "ow", false, "overwrite existing files instead of autorenaming")
	fs.BoolVar(&o.DeleteRemote, "dr", false, "delete remote files which don't exist locally (implies --ow)")
	fs.BoolVar(&o.Search, "s", false, "file-search (disables upload)")
	fs.BoolVar(&o.DryRun, "dry-run", false, "list what would be uploaded (and deleted with --dr); change nothing")
	fs.Var(&xs, "x", "skip file if filesystem-abspath matches REGEX (repeatable; case-insensitive, from the start)")
	fs.Var(&excl, "exclude", "skip files and folders whose name or relative path matches GLOB (repeatable)")
	fs.Var(&incl, "include", "upload only files whose name or relative path matches GLOB (repeatable)")
	fs.BoolVar(&o.Touch, "touch", false, "if last-modified timestamps differ, push local to server (need write+delete perms)")
	fs.BoolVar(&o.Insecure, "td", false, "disable certificate check")
	fs.StringVar(&te, "te", "", "path to ca.pem or cert.pem to expect/verify")
	fs.StringVar(&cacert, "cacert", "", "same as -te")
	fs.IntVar(&o.Retries, "retries", 10, "retries of a failed request (connection errors, 5xx, 429) with backoff")
	fs.BoolVar(&jsonOut, "json", false, "one JSON object per event on stdout (see README)")
	fs.BoolVar(&ns, "ns", false, "no live status line, even on a terminal")
	fs.BoolVar(&quiet, "q", false, "no progress lines")
	fs.IntVar(&every, "pi", 10, "seconds between progress lines when not on a terminal")
	usage := func() {
		fmt.Fprint(stdout, upUsage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
	}
	// Flags and arguments may mix, as u2c.py takes them.
	var pos []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				usage()
				return 0
			}
			fmt.Fprintf(stderr, "hoard up: %s (see hoard up -h)\n", oneLine(err.Error()))
			return 2
		}
		rest = fs.Args()
		if len(rest) == 0 {
			break
		}
		if rest[0] == "--" {
			pos = append(pos, rest[1:]...)
			break
		}
		pos = append(pos, rest[0])
		rest = rest[1:]
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "hoard up: "+format+"\n", a...)
		return 2
	}
	if len(pos) < 2 {
		return bad("need a URL and at least one PATH: hoard up [flags] URL PATH... (see hoard up -h)")
	}
	o.URL = pos[0]
	if _, _, err := client.ParseURL(o.URL); err != nil {
		return bad("%s", err)
	}
	switch {
	case o.Jobs < 1 || o.Jobs > 256:
		return bad("-j %d: want 1 to 256 connections", o.Jobs)
	case o.Handshakes < 0 || o.Handshakes > 1024:
		return bad("--hs %d: want 0 (default) to 1024", o.Handshakes)
	case sz < 1 || sz > 4096:
		return bad("--sz %d: want 1 to 4096 MiB", sz)
	case o.Retries < 0:
		return bad("--retries %d: want 0 or more", o.Retries)
	case every < 1:
		return bad("--pi %d: want at least 1 second", every)
	case o.Search && o.DeleteRemote:
		return bad("-s (search) and --dr (delete) do not go together")
	case te != "" && cacert != "" && te != cacert:
		return bad("-te and --cacert name different files; give one")
	}
	o.PostSize = int64(sz) << 20
	o.Every = time.Duration(every) * time.Second
	o.CACert = cacert
	if te != "" {
		o.CACert = te
	}
	for _, x := range xs {
		re, err := client.CompileX(x)
		if err != nil {
			return bad("-x %q: %v", x, err)
		}
		o.Filter.Exclude = append(o.Filter.Exclude, re)
	}
	for _, g := range append(append([]string{}, excl...), incl...) {
		if _, err := matchCheck(g); err != nil {
			return bad("glob %q: %v", g, err)
		}
	}
	o.Filter.Skip, o.Filter.Only = excl, incl
	if pw == "" {
		pw = os.Getenv("HOARD_PW")
	}
	if f, ok := strings.CutPrefix(pw, "$"); ok && f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return bad("-a $FILE: %v", err)
		}
		pw = strings.TrimSpace(string(b))
	}
	o.Password = pw
	for _, p := range pos[1:] {
		t, err := client.NewTarget(p)
		if err != nil {
			return bad("%s", oneLine(err.Error()))
		}
		o.Targets = append(o.Targets, t)
	}
	o.JSON = jsonOut
	o.Stdout, o.Stderr = stdout, stderr
	if quiet {
		o.Every = 1000 * time.Hour
	} else if f, ok := stderr.(*os.File); ok && !ns && isTerminal(f) {
		o.Live = true
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sum, err := client.Run(ctx, o)
	switch {
	case err != nil && sum == nil:
		fmt.Fprintf(stderr, "hoard up: %v\n", err)
		return 1
	case err != nil || sum.Failed > 0:
		return 1
	}
	return 0
}

// isTerminal reports whether f is a character device (a terminal), by
// its mode: golang.org/x/term is not in the module graph.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// matchCheck tells a malformed glob before the walk meets it.
func matchCheck(g string) (bool, error) {
	if g == "" {
		return false, errors.New("empty")
	}
	_, err := path.Match(g, "")
	return true, err
}
