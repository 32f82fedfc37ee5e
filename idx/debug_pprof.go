//go:build pprof

package idx

// A profiling build (go build -tags pprof) also serves every open
// database's Pebble metrics at /debug/pebble on the HOARD_PPROF address:
// flushes, compactions and the shape of the tree under a load.

import (
	"fmt"
	"net/http"
	"sync"
)

var debugDBs struct {
	sync.Mutex
	all []*DB
}

func init() {
	debugOpen = func(d *DB) {
		debugDBs.Lock()
		debugDBs.all = append(debugDBs.all, d)
		debugDBs.Unlock()
	}
	http.HandleFunc("/debug/pebble", func(w http.ResponseWriter, r *http.Request) {
		debugDBs.Lock()
		defer debugDBs.Unlock()
		for _, d := range debugDBs.all {
			select {
			case <-d.quit:
				continue
			default:
			}
			fmt.Fprintf(w, "== %s\n%s\n", d.dir, d.db.Metrics())
		}
	})
}
