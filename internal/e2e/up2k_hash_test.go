package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hoard/up2k/sha512x8"
)

// TestUp2kSingleHash: --single-hash keeps every chunk off the AVX-512
// lanes (the start-up log says so), and uploads, parallel and stitched,
// arrive intact either way.
func TestUp2kSingleHash(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		args      []string
		wantLanes bool
	}{
		{name: "default", wantLanes: sha512x8.Available()},
		{name: "single-hash", args: []string{"--single-hash"}, wantLanes: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vol := t.TempDir()
			s := start(t, append([]string{"-v", vol + "::rw"}, tc.args...)...)
			want := fmt.Sprintf("avx512_lanes=%v", tc.wantLanes)
			// The log is copied from hoard's stderr on its own, so it may
			// lag behind the address on stdout: wait for the line.
			var line string
			for deadline := time.Now().Add(10 * time.Second); line == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				for _, l := range strings.Split(s.logs.String(), "\n") {
					if strings.Contains(l, `msg="chunk hashing"`) {
						line = l
					}
				}
			}
			if !strings.Contains(line, want) {
				t.Fatalf("start-up log says %q, want %s", line, want)
			}
			f := newUp2kFile(randomBytes(8<<20 + 777)) // 9 chunks of 1 MiB: big enough for the lanes
			up2kUpload(t, s, "/", "par.bin", f, 1600000000, 4)
			wantUploaded(t, filepath.Join(vol, "par.bin"), f.data, 1600000000)

			g := newUp2kFile(randomBytes(6 << 20))
			rep := up2kHandshake(t, s, "/", "stitched.bin", g, 1600000000, nil)
			resp, b := postChunks(t, s, rep.Purl, rep.Wark, stitchHashes(g.hashes), g.data)
			wantStatus(t, resp, b, 200)
			wantUploaded(t, filepath.Join(vol, "stitched.bin"), g.data, 1600000000)
		})
	}
}
