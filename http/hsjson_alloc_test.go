package http

import (
	"net/http/httptest"
	"strings"
	"testing"

	"hoard/up2k"
)

// TestHandshakeDecodeAllocs: reading a handshake body as u2c.py sends it
// (every member read, then refused for its last one, so that nothing else
// runs) allocates little: no map of members, no second decode of each.
func TestHandshakeDecodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	srv, _ := newUp2kServer(t)
	h := up2k.ChunkHash([]byte("one"))
	body := "{\"hash\": [\"" + h + "\"],\n\"name\": \"f00001.bin\",\n\"lmod\": 1732400000.5,\n\"size\": 3,\n\"replace\": 5}"
	var code int
	n := testing.AllocsPerRun(200, func() {
		req := httptest.NewRequest("POST", "/d/", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		code = w.Code
	})
	if code != 400 {
		t.Fatalf("status %d, want 400 (replace: 5)", code)
	}
	t.Logf("%.0f allocations per refused handshake", n)
	if n > handshakeAllocs {
		t.Errorf("%.0f allocations per refused handshake, want at most %d", n, handshakeAllocs)
	}
}

// 82 before the map-free reading, 55 with it (the request, the recorder
// and the error answer are most of them).
const handshakeAllocs = 58
