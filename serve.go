package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	srvhttp "hoard/http"
	"hoard/internal/metrics"
)

// newServer is the HTTP server of the services, with its timeouts.
func newServer(svc *services, o *options, log *slog.Logger, access *srvhttp.AccessLog) *http.Server {
	st, up, ix, med, extra := svc.store, svc.up2k, svc.index, svc.media, svc.extra
	proxy, _ := o.proxyConfig() // checked by validate
	cfg := srvhttp.Config{Store: st, Logger: log, MaxRanges: o.maxRanges, Up2k: up, ArchMT: o.archMT, Index: ix, SrchHits: o.srchHits, SrchMax: o.srchMax, Media: med, Extra: extra, Proxy: proxy, DAV: srvhttp.DAVConfig{Off: o.noDav, Inf: o.davInf}, Access: access, RecvLowat: recvLowat}
	if svc.stats != nil {
		cfg.Observer, cfg.Metrics = svc.stats, svc.stats
	}
	handler := srvhttp.New(cfg)
	if svc.stats != nil {
		svc.stats.Watch(metrics.Sources{Store: st, Up2k: up, Index: ix, Media: med, Downloads: handler.ActiveDownloads})
	}
	srv := &http.Server{
		Handler:           withTLSState(handler),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		// Every request reaches the handler (OPTIONS * too), which
		// checks each one's framing against what the connection carried.
		ConnContext:                  tlsConnContext, // and framing's
		DisableGeneralOptionsHandler: true,
	}
	srv.RegisterOnShutdown(handler.StopStreams)
	return srv
}

// serve serves on the listeners until SIGINT or SIGTERM (a second one
// exits at once) or until a listener fails, then shuts the server down,
// letting requests in flight finish for up to 30 s; each SIGHUP calls
// reload meanwhile. It returns the exit status: 0, or 1 when a listener
// failed.
func serve(srv *http.Server, listeners []net.Listener, tl *tlsSetup, stdout io.Writer, log *slog.Logger, reload func()) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	hups := make(chan os.Signal, 1)
	signal.Notify(hups, syscall.SIGHUP)
	defer signal.Stop(hups)
	stopHup, hupDone := make(chan struct{}), make(chan struct{})
	defer func() { close(stopHup); <-hupDone }() // a reload under way ends before the services close
	go func() {
		defer close(hupDone)
		for {
			select {
			case <-hups:
				reload()
			case <-stopHup:
				return
			}
		}
	}()
	var wg sync.WaitGroup
	serveErr := make(chan error, 2*len(listeners))
	for _, ln := range listeners {
		for _, scheme := range tl.schemes() {
			fmt.Fprintf(stdout, "listening on %s://%s\n", scheme, ln.Addr()) // tests read the first
		}
		for _, l := range tl.wrap(ln) { // framing over TLS over TCP (tls.go)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
					serveErr <- err
				}
			}()
		}
	}
	code := 0
	select {
	case sig := <-sigs:
		log.Info("shutting down", "signal", sig.String())
	case err := <-serveErr:
		log.Error("server failed", "err", err)
		code = 1
	}
	go func() {
		<-sigs
		log.Warn("second signal; exiting at once")
		os.Exit(1)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("shutdown did not finish in time; closing connections", "err", err)
		srv.Close()
	}
	wg.Wait()
	return code
}

// listen opens one listener per address and port.
func listen(addrs, ports string) ([]net.Listener, error) {
	ps, err := parsePorts(ports)
	if err != nil {
		return nil, err
	}
	var out []net.Listener
	for _, n := range ps {
		for _, a := range strings.Split(addrs, ",") {
			a = strings.Trim(strings.TrimSpace(a), "[]")
			if a == "::" || a == "0.0.0.0" {
				a = ""
			}
			ln, err := net.Listen("tcp", net.JoinHostPort(a, strconv.Itoa(n)))
			if err != nil {
				closeListeners(out)()
				return nil, fmt.Errorf("listen on %s port %d: %w", a, n, err)
			}
			out = append(out, ln)
		}
	}
	return out, nil
}
