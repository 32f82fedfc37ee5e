//go:build pprof

package main

// A profiling build (go build -tags pprof) serves net/http/pprof on the
// address in HOARD_PPROF (say 127.0.0.1:6060), for measuring hoard under
// load (issue 19). Release builds have none of it.

import (
	"log/slog"
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	addr := os.Getenv("HOARD_PPROF")
	if addr == "" {
		return
	}
	go func() {
		if err := http.ListenAndServe(addr, nil); err != nil {
			slog.Error("pprof", "err", err)
		}
	}()
}
