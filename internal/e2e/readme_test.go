package e2e

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The README's quick tour is run as written. Its ```sh block after the
// marker <!-- tour:serve --> says how to start hoard: every line but the
// hoard command runs first with bash, then hoard starts with the command's
// own arguments (split by bash) in the same folder, on a free loopback
// port. Each ```sh block after a <!-- tour --> marker is then run command
// by command with bash in that folder, with 3923 in it replaced by the
// real port. A command must exit with status 0, and where the README
// states its output ("# → TEXT" at the end of the line, or on the lines
// just below it) the output must contain TEXT.
//
// curl gets a configuration file (CURL_HOME) with fail-with-body, so an
// HTTP error fails the command; a command whose stated output is an HTTP
// error status (401) may then exit with curl's status 22. "(once indexed)"
// before the stated output means the index catches up in the background:
// the command is tried again for a few seconds until its output is there.

const (
	tourServeMark = "<!-- tour:serve -->"
	tourMark      = "<!-- tour -->"
	outputMark    = "# → "
	onceIndexed   = "(once indexed) "
)

// tourStep is one command of the tour and what it must print.
type tourStep struct {
	line    int      // in README.md, for messages
	command string   // continuation lines joined
	want    []string // stated output, each a substring of stdout
	retry   bool     // the stated output may take a moment (the index)
}

// readmeBlocks returns the ```sh blocks that follow the marker in the
// README, each as its lines with their line numbers (1-based).
func readmeBlocks(t *testing.T, readme, marker string) [][]numberedLine {
	t.Helper()
	lines := strings.Split(readme, "\n")
	var blocks [][]numberedLine
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != marker {
			continue
		}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "```sh" {
			t.Fatalf("README.md:%d: %s must be followed by a ```sh block", i+1, marker)
		}
		var block []numberedLine
		j := i + 2
		for ; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
			block = append(block, numberedLine{number: j + 1, text: lines[j]})
		}
		if j == len(lines) {
			t.Fatalf("README.md:%d: the ```sh block after %s does not end", i+2, marker)
		}
		blocks = append(blocks, block)
		i = j
	}
	return blocks
}

type numberedLine struct {
	number int
	text   string
}

// tourSteps splits a tour block into commands and their stated outputs.
func tourSteps(t *testing.T, block []numberedLine) []tourStep {
	t.Helper()
	var steps []tourStep
	attach := false // the line above is a command or a stated output
	for i := 0; i < len(block); i++ {
		l := block[i]
		text := strings.TrimSpace(l.text)
		if rest, ok := strings.CutPrefix(text, outputMark); ok {
			if !attach {
				t.Fatalf("README.md:%d: a stated output must follow its command", l.number)
			}
			steps[len(steps)-1].expect(rest)
			continue
		}
		if text == "" || strings.HasPrefix(text, "#") {
			attach = false // a blank line, or a comment for the reader
			continue
		}
		step := tourStep{line: l.number}
		cmd := text
		for strings.HasSuffix(cmd, "\\") && i+1 < len(block) {
			i++
			cmd = strings.TrimSuffix(cmd, "\\") + " " + strings.TrimSpace(block[i].text)
		}
		if c, out, ok := strings.Cut(cmd, " "+outputMark); ok {
			cmd = c
			step.expect(out)
		}
		step.command = strings.TrimSpace(cmd)
		steps = append(steps, step)
		attach = true
	}
	return steps
}

func (s *tourStep) expect(out string) {
	out = strings.TrimSpace(out)
	if rest, ok := strings.CutPrefix(out, onceIndexed); ok {
		s.retry = true
		out = rest
	}
	s.want = append(s.want, out)
}

// httpErrorStatus reports whether the stated output is only an HTTP error
// status, such as 401.
var httpErrorStatus = regexp.MustCompile(`^[45][0-9][0-9]$`)

func TestReadmeTour(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("the README tour runs curl, which is not installed (apt-get install curl)")
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	serve := readmeBlocks(t, readme, tourServeMark)
	if len(serve) != 1 {
		t.Fatalf("README.md has %d blocks marked %s, want 1", len(serve), tourServeMark)
	}
	var steps []tourStep
	for _, block := range readmeBlocks(t, readme, tourMark) {
		steps = append(steps, tourSteps(t, block)...)
	}
	if len(steps) < 10 {
		t.Fatalf("README.md's tour has %d commands; the markers %s are missing or moved", len(steps), tourMark)
	}

	dir := t.TempDir()
	curlHome := t.TempDir()
	if err := os.WriteFile(filepath.Join(curlHome, ".curlrc"), []byte("fail-with-body\nsilent\nshow-error\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "CURL_HOME="+curlHome, "LC_ALL=C.UTF-8")

	var args []string
	for _, l := range serve[0] {
		text := strings.TrimSpace(l.text)
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(text, "hoard "); ok {
			// bash splits the arguments as it would for the reader.
			out := runBash(t, dir, env, `printf '%s\0' `+rest)
			args = strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")
			continue
		}
		runBash(t, dir, env, text)
	}
	if args == nil {
		t.Fatalf("README.md: the block marked %s has no hoard command", tourServeMark)
	}
	s := startInDir(t, dir, args...)
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()

	for _, step := range steps {
		cmd := strings.ReplaceAll(step.command, "3923", port)
		deadline := time.Now().Add(10 * time.Second)
		for {
			stdout, stderr, code := bashCommand(dir, env, cmd)
			missing := ""
			for _, w := range step.want {
				if w = strings.ReplaceAll(w, "3923", port); !strings.Contains(stdout, w) {
					missing = w
					break
				}
			}
			allowedCode := code == 0 || code == 22 && len(step.want) == 1 && httpErrorStatus.MatchString(step.want[0])
			if allowedCode && missing == "" {
				break
			}
			if step.retry && allowedCode && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			t.Fatalf("README.md:%d: %s\nexit status %d; want output containing %q\nstdout:\n%.2000s\nstderr:\n%.2000s\nserver log:\n%s",
				step.line, step.command, code, missing, stdout, stderr, s.logs)
		}
	}
}

// bashCommand runs one command line with bash in dir.
func bashCommand(dir string, env []string, command string) (stdout, stderr string, code int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir, cmd.Env = dir, env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		code = -1
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), code
}

// runBash runs a set-up command and fails the test unless it succeeds.
func runBash(t *testing.T, dir string, env []string, command string) string {
	t.Helper()
	stdout, stderr, code := bashCommand(dir, env, command)
	if code != 0 {
		t.Fatalf("%s: exit status %d\n%s", command, code, stderr)
	}
	return stdout
}
