package store

import (
	"os"
	"sync/atomic"
	"time"
)

// fsyncObs hears the duration of every fsync and fdatasync the upload
// paths make (a file's bytes, a folder's entries). The process has one:
// main wires it to the metrics when --stats is on.
var fsyncObs atomic.Pointer[func(time.Duration)]

// ObserveFsync makes fn hear how long each fsync took; nil stops it. fn
// must be quick and safe for concurrent use.
func ObserveFsync(fn func(time.Duration)) {
	if fn == nil {
		fsyncObs.Store(nil)
		return
	}
	fsyncObs.Store(&fn)
}

// timed runs sync and tells the observer how long it took.
func timed(sync func() error) error {
	p := fsyncObs.Load()
	if p == nil {
		return sync()
	}
	start := time.Now()
	err := sync()
	(*p)(time.Since(start))
	return err
}

// fsyncFile is f.Sync, observed.
func fsyncFile(f *os.File) error { return timed(f.Sync) }
