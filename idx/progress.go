package idx

import (
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"hoard/store"
)

// scanProgress is how far a volume's running scan is.
type scanProgress struct {
	running atomic.Bool
	start   atomic.Int64 // unix nanoseconds
	files   atomic.Int64 // files seen so far
	bytes   atomic.Int64 // their bytes
	// The previous scan's totals, 0 before the first one ends: the
	// progress log's ETA.
	lastFiles, lastBytes atomic.Int64
}

// begin marks a scan started.
func (p *scanProgress) begin(now time.Time) {
	p.files.Store(0)
	p.bytes.Store(0)
	p.start.Store(now.UnixNano())
	p.running.Store(true)
}

// end marks the scan over; complete says it saw every file.
func (p *scanProgress) end(complete bool) {
	if complete {
		p.lastFiles.Store(p.files.Load())
		p.lastBytes.Store(p.bytes.Load())
	}
	p.running.Store(false)
}

// log logs one progress line: files, bytes, rate, and an ETA when the
// previous scan's size is known.
func (p *scanProgress) log(log *slog.Logger, now time.Time) {
	files, bytes := p.files.Load(), p.bytes.Load()
	el := now.Sub(time.Unix(0, p.start.Load()))
	attrs := []any{"files", files, "bytes", bytes, "size", store.HumanSize(bytes), "elapsed", el.Round(time.Second)}
	if s := el.Seconds(); s > 0 {
		attrs = append(attrs, "files_per_s", int64(float64(files)/s), "rate", store.HumanSize(int64(float64(bytes)/s))+"/s")
		if lf := p.lastFiles.Load(); lf > files && files > 0 {
			eta := time.Duration(float64(el) * float64(lf-files) / float64(files))
			attrs = append(attrs, "eta", eta.Round(time.Second))
		}
	}
	log.Info("scan progress", attrs...)
}

// progressEvery is how often a running scan logs its progress.
var progressEvery = 5 * time.Second

// watch logs the progress every Config.Progress until done closes.
func (x *Indexer) watch(p *scanProgress, log *slog.Logger, done <-chan struct{}) {
	every := x.cfg.Progress
	if every <= 0 {
		every = progressEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			p.log(log, now)
		}
	}
}

// VolStats is one indexed volume's state, for the metrics.
type VolStats struct {
	Vol        *store.Volume
	Files      int64 // files in the index
	FilesKnown bool  // Files was counted (false until the database is open)
	Scanning   bool
	ScanFiles  int64 // files the running (or last) scan saw so far
	ScanBytes  int64
}

// Stats is every indexed volume's state.
func (x *Indexer) Stats() []VolStats {
	out := make([]VolStats, 0, len(x.list()))
	for _, vi := range x.list() {
		n, ok := vi.db.FileCount()
		out = append(out, VolStats{Vol: vi.v, Files: n, FilesKnown: ok, Scanning: vi.prog.running.Load(), ScanFiles: vi.prog.files.Load(), ScanBytes: vi.prog.bytes.Load()})
	}
	return out
}

// busy is the error of a search while vi is not ready: how far its scan is.
func (vi *volIdx) busy() *BusyError {
	e := &BusyError{RetryAfter: 5 * time.Second}
	if vi.prog.running.Load() {
		e.Scanning, e.Files, e.Bytes = true, vi.prog.files.Load(), vi.prog.bytes.Load()
	}
	return e
}

// commas writes n with thousands separators: 12,345.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := ""
	if n < 0 {
		neg, s = "-", s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return neg + s
}

// scanMsg is the progress a BusyError reports.
func scanMsg(files, bytes int64) string {
	return fmt.Sprintf("scan in progress: %s files, %s so far; indexing, please retry shortly", commas(files), store.HumanSize(bytes))
}
