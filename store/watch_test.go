package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWatch checks both ways of waiting, the system's notification
// (inotify on Linux) and polling (everywhere else, and where inotify is
// out of watches): a write, an append and a delete of the open file are
// reported as changes, a quiet interval is not, and a canceled context
// ends the wait.
func TestWatch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		watch func(*os.File, time.Duration) *Watch
	}{
		{name: "system", watch: WatchFile},
		{name: "polling", watch: watchPolling},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			const every = 50 * time.Millisecond
			w := tc.watch(f, every)
			defer w.Close()
			if tc.name == "system" && !w.Notified() {
				t.Skip("no change notification here; the polling case covers WatchFile")
			}
			ctx := context.Background()

			// Nothing happens: Wait returns after about one interval, no change.
			start := time.Now()
			if !w.Wait(ctx) || w.Changed() {
				t.Fatalf("quiet interval: changed=%v", w.Changed())
			}
			if d := time.Since(start); d < every/2 || d > 5*time.Second {
				t.Fatalf("quiet wait took %v, want about %v", d, every)
			}

			changes := []struct {
				what string
				do   func() error
			}{
				{"rewrite", func() error { return os.WriteFile(p, []byte("xy"), 0o644) }},
				{"append", func() error {
					a, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
					if err != nil {
						return err
					}
					a.WriteString("z")
					return a.Close()
				}},
				{"delete", func() error { return os.Remove(p) }},
			}
			for _, c := range changes {
				// Let the mtime tick for file systems with coarse times.
				time.Sleep(20 * time.Millisecond)
				if err := c.do(); err != nil {
					t.Fatal(err)
				}
				seen := false
				for i := 0; i < 20 && !seen; i++ {
					if !w.Wait(ctx) {
						t.Fatalf("%s: Wait returned false", c.what)
					}
					seen = w.Changed()
				}
				if !seen {
					t.Fatalf("%s: no change reported", c.what)
				}
			}
			if fi, err := f.Stat(); err != nil || Links(fi) != 0 {
				t.Fatalf("deleted file: links %d, err %v", Links(fi), err)
			}

			ctx, cancel := context.WithCancel(ctx)
			cancel()
			if w.Wait(ctx) {
				t.Fatal("Wait ignored a canceled context")
			}
		})
	}
}
