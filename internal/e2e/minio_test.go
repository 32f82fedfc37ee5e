package e2e

// A real MinIO for the tests of volumes on object storage (docs/s3.md):
// started per test on a loopback port as a 4-drive erasure set, with
// MINIO_CI_CD=on. The binary is $HOARD_MINIO, else `minio` on PATH, else
// the one .ci/run installs (${XDG_CACHE_HOME:-$HOME/.cache}/hoard-ci/bin/minio).
// Without one the tests skip, saying so.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

const (
	minioUser = "hoardtest"
	minioPass = "hoardtest-secret"
)

// minioBin finds the MinIO server binary, or "" when there is none.
func minioBin() string {
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

// minioServer is one MinIO process with its drives.
type minioServer struct {
	bin, dir, addr string
	cmd            *exec.Cmd
	logs           *syncBuf
	client         *minio.Client
}

// startMinio starts MinIO for the test, with the bucket made, and sets
// the AWS_* variables hoard reads (so the test may not be parallel).
func startMinio(t *testing.T, bucket string) *minioServer {
	t.Helper()
	bin := minioBin()
	if bin == "" {
		t.Skip("no MinIO server binary: set HOARD_MINIO, put minio on PATH, or run .ci/run (go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c)")
	}
	m := &minioServer{bin: bin, dir: t.TempDir(), addr: "127.0.0.1:" + strconv.Itoa(freePort(t))}
	m.run(t)
	t.Cleanup(func() { m.halt(t) })
	c, err := minio.New(m.addr, &minio.Options{Creds: credentials.NewStaticV4(minioUser, minioPass, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	m.client = c
	if err := c.MakeBucket(context.Background(), bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("making bucket %s: %v\nminio log:\n%s", bucket, err, m.logs)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", minioUser)
	t.Setenv("AWS_SECRET_ACCESS_KEY", minioPass)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL", m.endpoint())
	return m
}

func (m *minioServer) endpoint() string { return "http://" + m.addr }

// run starts the process on m.addr and waits until it is ready.
func (m *minioServer) run(t *testing.T) {
	t.Helper()
	m.logs = &syncBuf{}
	cmd := exec.Command(m.bin, "server", "--quiet", "--address", m.addr, "--console-address", "127.0.0.1:"+strconv.Itoa(freePort(t)), filepath.Join(m.dir, "d{1...4}"))
	cmd.Env = append(os.Environ(), "MINIO_CI_CD=on", "MINIO_ROOT_USER="+minioUser, "MINIO_ROOT_PASSWORD="+minioPass, "MINIO_BROWSER=off", "MINIO_UPDATE=off")
	cmd.Stdout, cmd.Stderr = m.logs, m.logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting minio: %v", err)
	}
	m.cmd = cmd
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(m.endpoint() + "/minio/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			m.halt(t)
			t.Fatalf("minio did not become ready at %s\nlog:\n%s", m.addr, m.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// halt stops the process (the drives stay, run starts it again).
func (m *minioServer) halt(t *testing.T) {
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

// object returns the bytes of key in bucket; ok false when there is none.
func (m *minioServer) object(t *testing.T, bucket, key string) ([]byte, bool) {
	t.Helper()
	o, err := m.client.GetObject(context.Background(), bucket, key, minio.GetObjectOptions{})
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

// keys lists every key in bucket.
func (m *minioServer) keys(t *testing.T, bucket string) []string {
	t.Helper()
	var out []string
	for oi := range m.client.ListObjects(context.Background(), bucket, minio.ListObjectsOptions{Recursive: true}) {
		if oi.Err != nil {
			t.Fatal(oi.Err)
		}
		out = append(out, oi.Key)
	}
	return out
}

// incomplete lists the multipart uploads not completed nor aborted.
func (m *minioServer) incomplete(t *testing.T, bucket string) []string {
	t.Helper()
	var out []string
	for u := range m.client.ListIncompleteUploads(context.Background(), bucket, "", true) {
		if u.Err != nil {
			t.Fatal(u.Err)
		}
		out = append(out, fmt.Sprintf("%s (%s)", u.Key, u.UploadID))
	}
	return out
}

// putObject stores data at key directly (as another S3 client would).
func (m *minioServer) putObject(t *testing.T, bucket, key string, data []byte) {
	t.Helper()
	if _, err := m.client.PutObject(context.Background(), bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
}
