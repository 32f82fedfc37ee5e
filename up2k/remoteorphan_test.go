package up2k

import (
	"math/rand/v2"
	"testing"
	"time"
)

// The sweep's rule by age (remoteorphan.go), over random ages: an upload
// a session names is never a candidate, nor one younger than the idle
// time, nor one at a key no session names younger than a day; every
// other one is.
func TestOrphanCandidateProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	now := time.Unix(1_800_000_000, 0)
	for range 100000 {
		idle := time.Duration(r.Int64N(int64(48 * time.Hour)))
		age := time.Duration(r.Int64N(int64(72*time.Hour))) - time.Hour // a clock ahead gives a negative age
		sessKey, named := r.IntN(2) == 0, r.IntN(2) == 0
		got := orphanCandidate(now, now.Add(-age), sessKey, named, idle)
		want := !named && age >= idle && (sessKey || age >= orphanFloor)
		if got != want {
			t.Fatalf("idle %v age %v sessKey %v named %v: %v, want %v", idle, age, sessKey, named, got, want)
		}
	}
}
