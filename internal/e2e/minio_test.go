package e2e

import (
	"testing"

	"hoard/internal/miniotest"
)

// startMinio starts a real MinIO (internal/miniotest) with the bucket made,
// and sets the AWS_* variables hoard reads (so the test may not be
// parallel).
func startMinio(t *testing.T, bucket string) *miniotest.Server {
	t.Helper()
	m := miniotest.Start(t, bucket)
	t.Setenv("AWS_ACCESS_KEY_ID", miniotest.User)
	t.Setenv("AWS_SECRET_ACCESS_KEY", miniotest.Pass)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL", m.Endpoint())
	return m
}
