package http

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"hoard/idx"
	"hoard/store"
)

// ExtraConfig configures ?tail, ?ups/?ru, ?dls and shares.
type ExtraConfig struct {
	// TailMax caps concurrent ?tail streams (503 beyond). Default 16.
	TailMax int
	// TailTime ends a ?tail stream after this long; 0 never.
	TailTime time.Duration
	// Recent is where ?ups and ?ru read uploads from; nil makes an
	// in-memory ring of RecentMax records fed by the store's events.
	Recent    idx.RecentUploads
	RecentMax int // default 4096
	// Shares holds share links; nil disables sharing.
	Shares *store.Shares
	// ShrPrefix is the URL folder shares are served under; default "shr".
	ShrPrefix string
}

// extra is the Server's state for these features.
type extra struct {
	tails    atomic.Int64
	tailMax  int
	tailMu   sync.Mutex
	tailsOf  map[string]int // streams per client (store.ClientKey)
	tailTime time.Duration
	closing  context.Context // canceled by StopStreams
	stopAll  context.CancelFunc
	dls      dlRegistry
	recent   idx.RecentUploads
	shares   *store.Shares
	shrName  string
}

func (s *Server) initExtra(cfg Config) {
	e := cfg.Extra
	s.tailMax, s.tailTime = e.TailMax, e.TailTime
	if s.tailMax <= 0 {
		s.tailMax = defTailMax
	}
	s.tailsOf = map[string]int{}
	s.closing, s.stopAll = context.WithCancel(context.Background())
	s.recent = e.Recent
	if s.recent == nil {
		n := e.RecentMax
		if n <= 0 {
			n = 4096
		}
		s.recent = idx.NewRecent(s.idx, cfg.Store, n)
	}
	s.shares = e.Shares
	s.shrName = strings.Trim(e.ShrPrefix, "/")
	if s.shrName == "" {
		s.shrName = "shr"
	}
}

// StopStreams ends every ?tail stream, so that a graceful shutdown does
// not wait for them. Register it with http.Server.RegisterOnShutdown.
func (s *Server) StopStreams() { s.stopAll() }

// globalView returns the handler of a GET modifier that answers at any
// path (?ups, ?ru, ?dls, ?shares), or nil.
func globalView(query map[string][]string) func(s *Server, q *req) error {
	switch {
	case has(query, "ups"):
		return (*Server).ups
	case has(query, "ru"):
		return (*Server).ru
	case has(query, "dls"):
		return (*Server).dlsPage
	case has(query, "shares"):
		return (*Server).listShares
	}
	return nil
}
