// Package miniotest starts a real MinIO for tests of volumes on object
// storage (docs/s3.md): per test, on a loopback port, as a 4-drive erasure
// set with MINIO_CI_CD=on (Start), or as a distributed set of 4 processes
// on loopback ports, one drive each (StartDistributed). The binary is $HOARD_MINIO, else `minio` on
// PATH, else the one .ci/run installs
// (${XDG_CACHE_HOME:-$HOME/.cache}/hoard-ci/bin/minio). Without one the
// test skips, saying so.
package miniotest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// The root account of every test MinIO.
const (
	User = "hoardtest"
	Pass = "hoardtest-secret"
)

// Bin finds the MinIO server binary, or "" when there is none.
func Bin() string {
	if p := os.Getenv("HOARD_MINIO"); p != "" {
		return p
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	p := filepath.Join(cache, "hoard-ci", "bin", "minio")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

// Server is one MinIO process with its drives.
type Server struct {
	Addr   string        // host:port
	Client *minio.Client // as root
	bin    string
	dir    string
	drives []string // the server's drive arguments: its own, or every node's
	cmd    *exec.Cmd
	logs   *logBuf
}

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start starts MinIO for the test with the buckets made; it stops at the
// test's cleanup.
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	bin := Bin()
	if bin == "" {
		t.Skip("no MinIO server binary: set HOARD_MINIO, put minio on PATH, or run .ci/run (go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c)")
	}
	m := &Server{bin: bin, dir: t.TempDir(), Addr: "127.0.0.1:" + strconv.Itoa(freePort(t))}
	m.drives = []string{filepath.Join(m.dir, "d{1...4}")}
	m.Run(t)
	t.Cleanup(m.Halt)
	m.connect(t)
	m.MakeBuckets(t, buckets...)
	return m
}

func (m *Server) connect(t testing.TB) {
	t.Helper()
	c, err := minio.New(m.Addr, &minio.Options{Creds: credentials.NewStaticV4(User, Pass, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	m.Client = c
}

// MakeBuckets makes the buckets (one minio-go's retry finds already ours
// counts as made).
func (m *Server) MakeBuckets(t testing.TB, buckets ...string) {
	t.Helper()
	for _, b := range buckets {
		err := m.Client.MakeBucket(context.Background(), b, minio.MakeBucketOptions{})
		// minio-go retries a request whose answer was slow or a 5xx (a
		// distributed set just come up); when the first try had made
		// the bucket, the retry hears that it is already ours.
		if err != nil && minio.ToErrorResponse(err).Code != "BucketAlreadyOwnedByYou" {
			t.Fatalf("making bucket %s: %v\nminio log:\n%s", b, err, m.logs)
		}
	}
}

// Drive is the folder of drive i (1…4) of a server Start started.
func (m *Server) Drive(i int) string { return filepath.Join(m.dir, "d"+strconv.Itoa(i)) }

// BreakDrive makes drive i (1…4) unusable while MinIO runs: its folder
// moves away and a plain file takes its place, so every path below it
// fails (ENOTDIR), as a drive that dropped off its bus. Root ignores
// permissions, so chmod would not do.
func (m *Server) BreakDrive(t testing.TB, i int) {
	t.Helper()
	d := m.Drive(i)
	if err := os.Rename(d, d+".broken"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d, []byte("this drive is broken on purpose\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Set is a distributed MinIO: several processes, each with one drive,
// forming one erasure set, as `minio server http://127.0.0.1:PORT{1...4}/dir{1...4}`
// starts it across machines (the drives here get a folder each, since
// MinIO refuses one path served by two ports of one address).
type Set struct {
	Nodes []*Server
}

// StartDistributed starts n (4 or more) MinIO processes on loopback
// ports as one distributed erasure set (n drives, the default parity:
// EC:2 for 4, so any one process may die and writes go on) with the
// buckets made; they stop at the test's cleanup.
func StartDistributed(t testing.TB, n int, buckets ...string) *Set {
	t.Helper()
	bin := Bin()
	if bin == "" {
		t.Skip("no MinIO server binary: set HOARD_MINIO, put minio on PATH, or run .ci/run (go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c)")
	}
	base := t.TempDir()
	s := &Set{}
	var endpoints []string
	for i := range n {
		m := &Server{bin: bin, dir: filepath.Join(base, "node"+strconv.Itoa(i+1)), Addr: "127.0.0.1:" + strconv.Itoa(freePort(t))}
		endpoints = append(endpoints, "http://"+m.Addr+m.dir)
		s.Nodes = append(s.Nodes, m)
	}
	for _, m := range s.Nodes {
		m.drives = endpoints
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s.Run(t)
	t.Cleanup(s.Halt)
	for _, m := range s.Nodes {
		m.connect(t)
	}
	s.Nodes[0].MakeBuckets(t, buckets...)
	return s
}

// Run starts every process that is not running and waits until each is
// ready (the set has its quorum).
func (s *Set) Run(t testing.TB) {
	t.Helper()
	for _, m := range s.Nodes {
		if m.cmd == nil {
			m.spawn(t)
		}
	}
	for _, m := range s.Nodes {
		m.waitReady(t, 90*time.Second)
	}
	// Each process ready is not yet the set able to write: wait for
	// the cluster's write quorum too, as a load balancer's check would.
	deadline := time.Now().Add(90 * time.Second)
	for _, m := range s.Nodes {
		for {
			resp, err := http.Get(m.Endpoint() + "/minio/health/cluster")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the distributed set has no write quorum at %s\nlog:\n%s", m.Addr, m.logs)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// Halt stops every process (SIGTERM); their drives stay.
func (s *Set) Halt() {
	for _, m := range s.Nodes {
		m.Halt()
	}
}

// Endpoint is the URL of node 1, the one tests point hoard at.
func (s *Set) Endpoint() string { return s.Nodes[0].Endpoint() }

// Endpoint is the server's URL.
func (m *Server) Endpoint() string { return "http://" + m.Addr }

// Run starts the process on m.Addr (again, after Halt) and waits until
// it is ready.
func (m *Server) Run(t testing.TB) {
	t.Helper()
	m.spawn(t)
	m.waitReady(t, 60*time.Second)
}

// spawn starts the process without waiting for it.
func (m *Server) spawn(t testing.TB) {
	t.Helper()
	m.logs = &logBuf{}
	args := append([]string{"server", "--quiet", "--address", m.Addr, "--console-address", "127.0.0.1:" + strconv.Itoa(freePort(t))}, m.drives...)
	cmd := exec.Command(m.bin, args...)
	// _MINIO_SERVER_LOCAL names this process's own endpoint of a
	// distributed set: in a container (/.dockerenv, Kubernetes) MinIO
	// will not take a loopback host for its own and waits forever for
	// it "to resolve to a valid IP". It is read only there, and only
	// for host:port endpoints.
	cmd.Env = append(os.Environ(), "MINIO_CI_CD=on", "MINIO_ROOT_USER="+User, "MINIO_ROOT_PASSWORD="+Pass, "MINIO_BROWSER=off", "MINIO_UPDATE=off", "_MINIO_SERVER_LOCAL="+m.Addr)
	cmd.Stdout, cmd.Stderr = m.logs, m.logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting minio: %v", err)
	}
	m.cmd = cmd
}

// waitReady polls the readiness probe.
func (m *Server) waitReady(t testing.TB, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get(m.Endpoint() + "/minio/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			m.Halt()
			t.Fatalf("minio did not become ready at %s\nlog:\n%s", m.Addr, m.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Kill ends the process with SIGKILL (no shutdown at all) and waits;
// its drives stay, and Run starts it again.
func (m *Server) Kill() {
	if m.cmd == nil {
		return
	}
	m.cmd.Process.Kill()
	m.cmd.Wait()
	m.cmd = nil
}

// Halt stops the process; its drives stay, and Run starts it again.
func (m *Server) Halt() {
	if m.cmd == nil {
		return
	}
	m.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { m.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		m.cmd.Process.Kill()
		<-done
	}
	m.cmd = nil
}

// Object returns the bytes of key in bucket; ok is false when there is none.
func (m *Server) Object(t testing.TB, bucket, key string) ([]byte, bool) {
	t.Helper()
	o, err := m.Client.GetObject(context.Background(), bucket, key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return nil, false
	}
	if err != nil {
		t.Fatalf("reading %s/%s: %v", bucket, key, err)
	}
	return b, true
}

// Keys lists every key in bucket.
func (m *Server) Keys(t testing.TB, bucket string) []string {
	t.Helper()
	var out []string
	for oi := range m.Client.ListObjects(context.Background(), bucket, minio.ListObjectsOptions{Recursive: true}) {
		if oi.Err != nil {
			t.Fatal(oi.Err)
		}
		out = append(out, oi.Key)
	}
	return out
}

// Incomplete lists the multipart uploads neither completed nor aborted.
func (m *Server) Incomplete(t testing.TB, bucket string) []string {
	t.Helper()
	var out []string
	for u := range m.Client.ListIncompleteUploads(context.Background(), bucket, "", true) {
		if u.Err != nil {
			t.Fatal(u.Err)
		}
		out = append(out, fmt.Sprintf("%s (%s)", u.Key, u.UploadID))
	}
	return out
}

// Put stores data at key directly, as another S3 client would.
func (m *Server) Put(t testing.TB, bucket, key string, data []byte) {
	t.Helper()
	if _, err := m.Client.PutObject(context.Background(), bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Remove deletes the object key of bucket, as another S3 client would.
func (m *Server) Remove(t testing.TB, bucket, key string) {
	t.Helper()
	if err := m.Client.RemoveObject(context.Background(), bucket, key, minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Freeze stops the process where it stands (SIGSTOP): the kernel still
// accepts connections on its port, but nothing answers — a store that
// hangs. Thaw lets it go on.
func (m *Server) Freeze() {
	if m.cmd != nil {
		m.cmd.Process.Signal(syscall.SIGSTOP)
	}
}

// Thaw ends a Freeze (SIGCONT).
func (m *Server) Thaw() {
	if m.cmd != nil {
		m.cmd.Process.Signal(syscall.SIGCONT)
	}
}
