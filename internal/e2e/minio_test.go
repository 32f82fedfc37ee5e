package e2e

import (
	"os"
	"strings"
	"sync"
	"testing"

	"hoard/internal/miniotest"
)

// hoardEnvs holds, per top-level test, the variables hoard gets beside
// the test's environment (setHoardEnv): a parallel test may not use
// t.Setenv.
var hoardEnvs sync.Map // test name → []string

// setHoardEnv gives every hoard the test (and its subtests) starts the
// AWS_* variables of MinIO at endpoint.
func setHoardEnv(t *testing.T, endpoint string) {
	name, _, _ := strings.Cut(t.Name(), "/")
	hoardEnvs.Store(name, []string{
		"AWS_ACCESS_KEY_ID=" + miniotest.User,
		"AWS_SECRET_ACCESS_KEY=" + miniotest.Pass,
		"AWS_REGION=us-east-1",
		"AWS_ENDPOINT_URL=" + endpoint,
	})
	t.Cleanup(func() { hoardEnvs.Delete(name) })
}

// testEnv is the environment hoard starts with for t: nil (inherit)
// unless setHoardEnv gave t variables.
func testEnv(t testing.TB) []string {
	name, _, _ := strings.Cut(t.Name(), "/")
	if v, ok := hoardEnvs.Load(name); ok {
		return append(os.Environ(), v.([]string)...)
	}
	return nil
}

// startMinio starts a real MinIO (internal/miniotest) with the bucket
// made, for a test that runs in parallel with the others (it calls
// t.Parallel): the AWS_* variables go to the hoards the test starts
// (setHoardEnv, through launch and runHoard), not to the test process.
// Serial, with the variables set by t.Setenv, the S3 tests held the
// package up for minutes (the expiry tests most).
func startMinio(t *testing.T, bucket string) *miniotest.Server {
	t.Helper()
	t.Parallel()
	m := miniotest.Start(t, bucket)
	setHoardEnv(t, m.Endpoint())
	return m
}
