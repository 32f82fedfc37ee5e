package up2k

import (
	"container/list"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"path"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"hoard/store"
	"hoard/up2k/sha512x8"
)

// Config is what a Manager needs.
type Config struct {
	Store *store.Store
	// DBs holds the session store of each volume. Volumes may share one
	// (when they share a state folder). A volume without one gets a
	// MemStore: its uploads do not survive a restart.
	DBs map[*store.Volume]SessionStore
	// Salt is --warksalt; "" means copyparty's "hunter2".
	Salt string
	// Drop is how long an unfinished upload may sit idle before it is
	// discarded with its work file (--snap-drop); 0 means 24 hours.
	Drop time.Duration
	// Workers bounds the goroutines that re-hash files (restart checks,
	// dedup sources); 0 means GOMAXPROCS.
	Workers int
	// SingleHash hashes every chunk with crypto/sha512 on its post's
	// own goroutine, even where the AVX-512 lanes could take the big
	// ones (for comparing the two).
	SingleHash bool
	// MaxUnfinished bounds the unfinished uploads in all (--reg-cap);
	// MaxUnfinishedIP those of one client address (an IPv6 client's /64)
	// (--reg-cap-ip). 0 means the defaults below. A handshake beyond
	// them is refused (503, 429) until some finish or are dropped.
	MaxUnfinished   int
	MaxUnfinishedIP int
	Logger          *slog.Logger
	Now             func() time.Time
}

// Default caps of unfinished uploads (Config.MaxUnfinished, …IP): 38400
// in all is copyparty's --reg-cap; one address may have 1024 (copyparty's
// u2c hashes up to 512 files ahead of its uploads).
const (
	DefaultMaxUnfinished   = 38400
	DefaultMaxUnfinishedIP = 1024
)

// Manager runs the up2k uploads of every volume. It is safe for
// concurrent use.
type Manager struct {
	placeMu sync.Mutex // takePlace and Volume.Claim of one handshake, together
	st      *store.Store
	salt    string
	idle    time.Duration // --snap-drop
	log     *slog.Logger
	now     func() time.Time
	dbs     atomic.Pointer[map[*store.Volume]SessionStore] // db(); PrepareVolume replaces it whole
	sem     chan struct{}                                  // one slot per hashing goroutine
	rsem    chan struct{}                                  // restart re-checks holding their tables at once

	// lanes hashes big chunks several at a time (nil without AVX-512,
	// or when Config.SingleHash asks for crypto/sha512 throughout);
	// laneBufs has a slot per buffer waiting there.
	lanes     *sha512x8.Hasher
	laneBufs  chan struct{}
	posts     atomic.Int64 // chunk posts in flight
	grouped   atomic.Int64 // chunks hashed from the work file in groups (writer.go hashGroup)
	heldWork  atomic.Int64 // sessions keeping their handshake's work file open (session.work)
	checked   atomic.Int64 // bytes hashed to check files (restarts, existing content)
	finished  atomic.Int64 // uploads published since start (stats.go)
	badChunks atomic.Int64 // chunks whose bytes did not match their hash

	ctx    context.Context // canceled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // background goroutines

	remote remoteCache // sessions of object-store volumes seen (remote.go)
	recent recentDone  // uploads just finished, for their last handshake (recent.go)
	rcaps  remoteCaps  // unfinished uploads of object-store volumes (remotecaps.go)
	// holdBodies: name holds read by this node's expiry (remotename.go).
	holdBodies holdCache

	mu       sync.Mutex // protects the fields below
	sessions map[skey]*session
	names    map[nameKey]string    // final names held by unfinished uploads (their warks)
	waiting  map[SessionStore]bool // stores whose sessions are loaded once they open
	closed   bool
	caps     caps

	// The chunk tables of live sessions kept in memory, least recently
	// used last (table.go).
	lruMu     sync.Mutex
	lru       *list.List
	tabMem    int64
	tabBudget int64
}

type skey struct {
	db   SessionStore
	wark string
}

// nameKey is a final name in a folder of a volume.
type nameKey struct {
	vol       *store.Volume
	dir, name string
}

// lazySmall turns on work files made by the first chunk post for uploads
// of at most store.SmallFile bytes (record.Lazy); tests turn it off.
var lazySmall = true

// reserveName holds the final name dir/name of vol for the upload wark;
// false when another upload holds it.
func (m *Manager) reserveName(vol *store.Volume, dir, name, wark string) bool {
	k := nameKey{vol, dir, name}
	m.mu.Lock()
	defer m.mu.Unlock()
	if w, ok := m.names[k]; ok && w != wark {
		return false
	}
	m.names[k] = wark
	return true
}

// releaseNameLocked gives up the name held by wark; m.mu must be held.
func (m *Manager) releaseNameLocked(vol *store.Volume, dir, name, wark string) {
	k := nameKey{vol, dir, name}
	if w, ok := m.names[k]; ok && w == wark {
		delete(m.names, k)
	}
}

func (m *Manager) releaseName(vol *store.Volume, dir, name, wark string) {
	m.mu.Lock()
	m.releaseNameLocked(vol, dir, name, wark)
	m.mu.Unlock()
}

// New makes a Manager. Call Load to take up the sessions of a previous
// run, and Close when done.
func New(cfg Config) (*Manager, error) {
	if cfg.Store == nil {
		return nil, errors.New("up2k: no store")
	}
	m := &Manager{
		st:        cfg.Store,
		salt:      cfg.Salt,
		idle:      cfg.Drop,
		log:       cfg.Logger,
		now:       cfg.Now,
		sessions:  map[skey]*session{},
		names:     map[nameKey]string{},
		waiting:   map[SessionStore]bool{},
		caps:      caps{all: cfg.MaxUnfinished, ip: cfg.MaxUnfinishedIP, per: map[string]*ipUse{}},
		lru:       list.New(),
		tabBudget: tableBudget,
	}
	if m.caps.all <= 0 {
		m.caps.all = DefaultMaxUnfinished
	}
	if m.caps.ip <= 0 {
		m.caps.ip = DefaultMaxUnfinishedIP
	}
	if m.salt == "" {
		m.salt = "hunter2"
	}
	if m.idle <= 0 {
		m.idle = 24 * time.Hour
	}
	if m.log == nil {
		m.log = slog.Default()
	}
	m.log = m.log.With("pkg", "up2k")
	if m.now == nil {
		m.now = time.Now
	}
	m.recent.init(m.now)
	w := cfg.Workers
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	m.sem = make(chan struct{}, w)
	m.rsem = make(chan struct{}, 2*w)
	if sha512x8.Available() && !cfg.SingleHash {
		m.lanes = sha512x8.NewHasher()
		m.laneBufs = make(chan struct{}, laneBufs)
	}
	m.log.Info("chunk hashing", "avx512_lanes", m.lanes != nil, "cpu_has_lanes", sha512x8.Available())
	dbs := map[*store.Volume]SessionStore{}
	for _, v := range cfg.Store.Mounted() {
		db := cfg.DBs[v]
		if db == nil {
			if !v.Remote() { // an object-store volume keeps its sessions in its bucket (remote.go)
				m.log.Warn("no session store for this volume; its unfinished uploads will not survive a restart", "volume", "/"+v.VPath)
			}
			db = NewMemStore()
		}
		dbs[v] = db
	}
	m.dbs.Store(&dbs)
	m.ctx, m.cancel = context.WithCancel(context.Background())
	cfg.Store.Subscribe(m.follow) // follow.go
	m.wg.Add(1)
	go m.expireLoop()
	return m, nil
}

// Close stops background work and closes the work files of unfinished
// uploads, which stay on disk to be resumed. Call it after the HTTP server
// has stopped handing requests to the Manager.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
	if m.lanes != nil {
		m.lanes.Close()
	}
	m.mu.Lock()
	var held []*session
	for _, s := range m.sessions {
		if s.mgr != nil {
			held = append(held, s)
		}
	}
	clear(m.sessions)
	m.mu.Unlock()
	for _, s := range held {
		s.closeWork() // s.mu is never taken under m.mu
	}
	return nil
}

// maxHeldWork bounds the work files that handshakes keep open for their
// first chunk post (two descriptors each: the file and its folder).
const maxHeldWork = 256

// Handshake is one up2k handshake, decoded and checked by the caller for
// its shape (types); the Manager checks the values.
type Handshake struct {
	Vol    *store.Volume
	Dir    string // folder inside Vol, slash-separated; "" or "." for its top
	Name   string
	Size   int64
	Lmod   int64 // unix seconds; ≤ 0 or absurd means now
	Hashes []string
	// Replace is copyparty's replace field: "" (never), "true" (always),
	// "mt" (when the upload is newer than the file) or "skip" (refuse).
	Replace string
	Rand    bool  // give the file a random name (keeping its extension)
	Life    int64 // seconds; ignored unless the volume has a lifetime
	Umod    bool  // an identical file there gets the upload's mtime
	// MayDelete: the user has the d permission, which replace and umod
	// need (they are ignored otherwise).
	MayDelete bool
	// MayRead: the user has the r permission. Without it a handshake
	// learns nothing of what the volume holds: content already there (at
	// another path, or at this one under no record) is not copied but
	// uploaded, and no answer names another file's or upload's path.
	MayRead  bool
	User, IP string
}

// Reply is the answer to a handshake.
type Reply struct {
	Name   string   // final name (after collision rename or rand)
	Dir    string   // folder inside the volume where the file is
	Size   int64    // as asked
	Lmod   int64    // the file's mtime (unix seconds)
	Need   []string // hashes still needed, as sent; empty when complete
	Wark   string
	Sparse bool
	// Info describes the finished file when Need is empty (for file keys).
	Info fs.FileInfo
}

// Rel is the file's path inside its volume.
func (r Reply) Rel() string { return path.Join(r.Dir, r.Name) }

// Handshake starts, resumes or completes an upload: it derives the wark,
// finds a live session, an identical finished file, or makes a new
// session with its sparse work file, persisted before it returns.
func (m *Manager) Handshake(ctx context.Context, h Handshake) (Reply, error) {
	dir, err := cleanDir(h.Dir)
	if err != nil {
		return Reply{}, err
	}
	h.Dir = dir
	if h.Name, err = m.checkName(h); err != nil {
		return Reply{}, err
	}
	cs, err := ChunkSizeFor(h.Size, len(h.Hashes))
	if err != nil {
		return Reply{}, err
	}
	keys := make([]string, len(h.Hashes))
	for i, s := range h.Hashes {
		if keys[i], _, err = ParseHash(s); err != nil {
			return Reply{}, err
		}
	}
	if now := m.now().Unix(); h.Lmod <= 0 || h.Lmod > 0xAAAAAAAA {
		h.Lmod = now
	}
	if lt := h.Vol.Flags().Lifetime; h.Life < 0 || h.Life >= int64(lt/time.Second) {
		// copyparty ignores life on volumes without a lifetime, and one
		// beyond the volume's (which then applies); so it never
		// overflows a Duration.
		h.Life = 0
	}
	switch h.Replace {
	case "", "skip":
	case "true", "mt":
		if !h.MayDelete {
			h.Replace = "" // copyparty drops it without the d permission
		}
	default:
		return Reply{}, invalidf("replace %q: want true, \"mt\" or \"skip\"", h.Replace)
	}
	if !h.MayDelete {
		h.Umod = false
	}
	var wark string
	if len(keys) == 0 {
		prel := dir
		if prel == "." {
			prel = ""
		}
		wark = MetaWark(m.salt, h.Lmod, h.Size, prel, h.Name)
	} else {
		wark = Wark(m.salt, h.Size, keys)
	}
	db := m.db(h.Vol)
	if db == nil {
		return Reply{}, fmt.Errorf("up2k: volume /%s is not known", h.Vol.VPath)
	}
	if h.Vol.Remote() {
		return m.remoteHandshake(ctx, h, cs, wark) // remote.go: the session lives in the bucket
	}
	if err := m.unavailable(db); err != nil {
		return Reply{}, err
	}
	k := skey{db, wark}
	m.mu.Lock()
	_, live := m.sessions[k]
	closed := m.closed
	m.mu.Unlock()
	if !live && !closed {
		// The last handshake of an upload just finished (copyparty's
		// clients send one for every file): answered without reading
		// the record it just wrote (recent.go).
		if rep, ok, err := m.recentHere(ctx, h, db, wark); ok || err != nil {
			return rep, err
		}
	}
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return Reply{}, ErrClosed
		}
		s := m.sessions[k]
		if s == nil {
			// Nobody is on this content: hold the wark while we look.
			s = &session{vol: h.Vol, db: db, ready: make(chan struct{})}
			s.rec.Wark = wark
			m.sessions[k] = s
			m.mu.Unlock()
			rep, live, err := m.start(ctx, s, h, cs, wark)
			if live == nil {
				// No session was made: release the wark.
				m.remove(s)
				s.err = errRetry
				close(s.ready)
			}
			return rep, err
		}
		m.mu.Unlock()
		if err := wait(ctx, s.ready); err != nil {
			return Reply{}, err
		}
		if s.err == errRetry {
			continue // that attempt is over; look again
		}
		if s.err != nil {
			return Reply{}, ErrClosed // its re-check was cut short by shutdown
		}
		rep, again, err := m.resume(ctx, s, h)
		if again {
			continue
		}
		return rep, err
	}
}

// errRetry marks a placeholder session that was only holding the wark.
var errRetry = errors.New("up2k: look again")

func wait(ctx context.Context, c <-chan struct{}) error {
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// resume answers a handshake for a live session.
func (m *Manager) resume(ctx context.Context, s *session, h Handshake) (Reply, bool, error) {
	t, err := m.table(ctx, s)
	if err != nil {
		s.mu.Lock()
		gone := s.gone || s.done
		s.mu.Unlock()
		if gone {
			return Reply{}, true, nil // it finished or was dropped meanwhile
		}
		return Reply{}, false, err
	}
	s.mu.Lock()
	if s.finishing {
		fin := s.fin
		s.mu.Unlock()
		if err := wait(ctx, fin); err != nil {
			return Reply{}, false, err
		}
		return Reply{}, true, nil
	}
	if s.gone {
		s.mu.Unlock()
		return Reply{}, true, nil
	}
	if !s.samePath(h.Dir, h.Name) {
		where := urlPath(s.vol, s.rel())
		if !h.MayRead && (s.rec.User != h.User || s.rec.IP != h.IP) {
			where = "(elsewhere)" // not this uploader's: its path is not theirs to learn
		}
		s.mu.Unlock()
		return Reply{}, false, &Error{Kind: Retry, Msg: "partial upload exists at a different location; please resume uploading here instead:\n" + where + " "}
	}
	rep := Reply{Name: s.rec.Name, Dir: s.rec.Dir, Size: s.rec.Size, Lmod: s.rec.Lmod, Wark: s.rec.Wark, Sparse: true}
	if s.done {
		rep.Name = path.Base(s.final)
		rep.Lmod = s.finalInfo.lmod
		s.mu.Unlock()
		rep.Need = []string{}
		rep.Dir = path.Dir(s.final)
		fi, err := s.vol.Stat(s.final)
		if err != nil {
			return Reply{}, true, nil // gone again; start over
		}
		rep.Info = fi
		return rep, false, nil
	}
	rep.Need = s.needLocked(t)
	if len(rep.Need) == 0 && !s.finishing {
		// Every chunk is here but publishing failed earlier: try again.
		s.finishing = true
		s.fin = make(chan struct{})
		s.mu.Unlock()
		if _, err := m.finish(ctx, s, nil); err != nil {
			return Reply{}, false, err
		}
		return Reply{}, true, nil
	}
	s.mu.Unlock()
	return rep, false, nil
}

// start handles a handshake for content nobody is uploading: an existing
// identical file (here or elsewhere in the volume) or a new session. live
// is the session when one was made (it is then in m.sessions and ready).
func (m *Manager) start(ctx context.Context, hold *session, h Handshake, cs int64, wark string) (Reply, *session, error) {
	rep, ok, err := m.existing(ctx, h, cs, wark)
	if err != nil || ok {
		return rep, nil, err
	}
	asked := h.Name
	if h.Rand || h.Vol.Flags().Rand {
		h.Name = randomName(h.Vol.Flags().NRand, h.Name)
	}
	if h.Size == 0 {
		if err := h.Vol.CheckSize(0); err != nil {
			return Reply{}, nil, err
		}
		replace, err := m.decideReplace(h)
		if err != nil {
			return Reply{}, nil, err
		}
		return m.empty(ctx, h, wark, replace)
	}
	// An unfinished upload takes one of its address's places and holds
	// its size of the free space until it is done.
	// Taking the place and claiming the space are one step: a handshake
	// between them would count this upload in its address's share but not
	// yet in the claims, and see more room than there is.
	m.placeMu.Lock()
	ipKey, err := m.takePlace(h.Vol, h.IP, h.Size)
	var space *store.Claim
	if err == nil {
		if space, err = h.Vol.Claim(h.Size); err != nil {
			m.givePlace(ipKey, h.Size)
		}
	}
	m.placeMu.Unlock()
	if err != nil {
		return Reply{}, nil, err
	}
	fail := func(err error) (Reply, *session, error) {
		space.Release()
		m.givePlace(ipKey, h.Size)
		return Reply{}, nil, err
	}
	replace, err := m.decideReplace(h)
	if err != nil {
		return fail(err)
	}
	rec := record{
		Wark: wark, Dir: h.Dir, Asked: asked, Size: h.Size, Lmod: h.Lmod, CS: cs,
		Hashes: h.Hashes, Created: m.now().UnixNano(), Life: h.Life, Replace: replace, User: h.User, IP: h.IP,
	}
	// A small new file gets no work file yet: its name is held in memory
	// (and by its session record), and its first chunk post writes into
	// an unnamed file that publishing links under that name (writer.go).
	rec.Lazy = lazySmall && h.Size <= store.SmallFile && !replace
	s, t, err := newSession(h.Vol, hold.db, rec)
	if err != nil {
		return fail(err)
	}
	var reserved []string
	reserve := func(n string) bool {
		if !m.reserveName(h.Vol, h.Dir, n, wark) {
			return false
		}
		reserved = append(reserved, n)
		return true
	}
	var temp *store.Temp
	var name string
	if rec.Lazy {
		// The folder stays held for the chunk post, as a work file would
		// (within maxHeldWork).
		hold := m.heldWork.Load() < maxHeldWork
		name, temp, err = h.Vol.FreeName(h.Dir, h.Name, h.IP, reserve, hold)
	} else {
		temp, name, err = h.Vol.CreatePartial(h.Dir, h.Name, h.Size, store.PartialOptions{Replace: replace, ClientIP: h.IP, Reserve: reserve})
	}
	for _, n := range reserved {
		if n != name || err != nil {
			m.releaseName(h.Vol, h.Dir, n, wark)
		}
	}
	if err != nil {
		return fail(err)
	}
	s.rec.Name = name
	blob, err := s.blob(t)
	if err == nil {
		if lz, ok := hold.db.(LazySessionStore); ok && rec.Lazy {
			err = lz.PutSessionLazy(context.WithoutCancel(ctx), wark, blob)
		} else {
			err = hold.db.PutSession(context.WithoutCancel(ctx), wark, blob)
		}
	}
	if err != nil {
		if temp != nil {
			temp.Abort()
		}
		m.releaseName(h.Vol, h.Dir, name, wark)
		return fail(err)
	}
	// Kept on disk; the first chunk post writes and publishes through this
	// handle and its folder (a small file's only post opens nothing), the
	// others open their own. A publish re-checks where the folder is then.
	if temp != nil {
		if m.heldWork.Add(1) <= maxHeldWork {
			s.work = temp
		} else {
			m.heldWork.Add(-1)
			temp.Close()
		}
	}
	s.mgr, s.poke = m, m.now()
	s.counted, s.ipKey, s.space = true, ipKey, space
	m.keep(s, t)
	m.mu.Lock()
	k := skey{hold.db, wark}
	m.sessions[k] = s
	m.mu.Unlock()
	close(s.ready)
	// The placeholder is replaced; its waiters look again and find s.
	hold.err = errRetry
	close(hold.ready)
	m.log.Info("upload started", "volume", "/"+h.Vol.VPath, "path", s.rel(), "size", h.Size, "chunks", len(h.Hashes), "wark", wark, "user", h.User, "ip", h.IP)
	s.mu.Lock()
	need := s.needLocked(t)
	s.mu.Unlock()
	return Reply{Name: name, Dir: h.Dir, Size: h.Size, Lmod: h.Lmod, Need: need, Wark: wark, Sparse: true}, s, nil
}

// decideReplace applies copyparty's replace policies to a taken name.
func (m *Manager) decideReplace(h Handshake) (bool, error) {
	if h.Replace == "" {
		return false, nil
	}
	fi, err := h.Vol.Stat(path.Join(h.Dir, h.Name))
	if err != nil || fi.IsDir() {
		return false, nil // nothing there to replace (or a folder: rename)
	}
	switch h.Replace {
	case "skip":
		return false, &Error{Kind: Conflict, Msg: "upload rejected, a file with that name already exists"}
	case "mt":
		return h.Lmod >= fi.ModTime().Unix(), nil
	}
	return true, nil
}

// empty publishes a 0-byte upload at once.
func (m *Manager) empty(ctx context.Context, h Handshake, wark string, replace bool) (Reply, *session, error) {
	t, err := h.Vol.CreateTemp(h.Dir)
	if err != nil {
		return Reply{}, nil, err
	}
	rel, fi, err := t.Publish(h.Name, store.PublishOptions{
		Replace: replace, Mtime: time.Unix(h.Lmod, 0), Life: time.Duration(h.Life) * time.Second, Uploader: h.User, ClientIP: h.IP,
	})
	if err != nil {
		return Reply{}, nil, err
	}
	if err := m.db(h.Vol).PutFile(context.WithoutCancel(ctx), wark, rel, metaOf(fi, m.now().Unix(), h.User, h.IP)); err != nil {
		return Reply{}, nil, err
	}
	m.log.Info("upload finished", "volume", "/"+h.Vol.VPath, "path", rel, "size", 0, "user", h.User, "ip", h.IP)
	return Reply{Name: path.Base(rel), Dir: h.Dir, Lmod: fi.ModTime().Unix(), Need: []string{}, Wark: wark, Sparse: true, Info: fi}, nil, nil
}

// checkName validates the asked file name the way copyparty sanitises it.
func (m *Manager) checkName(h Handshake) (string, error) {
	name := h.Name
	if h.Rand || h.Vol.Flags().Rand {
		// The browser sends "a\n<name>" in this mode; only the extension
		// counts, and it must be harmless.
		if i := strings.LastIndexByte(name, '\n'); i >= 0 {
			name = name[i+1:]
		}
	}
	if strings.Contains(name, "/") {
		return "", invalidf("your client is old; press CTRL-SHIFT-R and try again (file name %q has a slash)", clip(name))
	}
	name = strings.ReplaceAll(name, "\\", "/")
	name = strings.TrimSpace(name[strings.LastIndexByte(name, '/')+1:])
	if len(name) > 255 {
		return "", invalidf("name or numchunks not according to spec: the file name is %d bytes long; at most 255", len(name))
	}
	if err := store.CheckName(name); err != nil || strings.HasSuffix(name, store.PartialSuffix) {
		return "", invalidf("bad file name %q (empty, \".\", \"..\", a control character, NUL, or the reserved %s ending)", clip(name), store.PartialSuffix)
	}
	if strings.EqualFold(name, store.HistName) {
		return "", invalidf("the name %s is reserved for the server's state", store.HistName)
	}
	return name, nil
}

func cleanDir(dir string) (string, error) {
	dir = strings.Trim(dir, "/")
	if dir == "" || dir == "." {
		return ".", nil
	}
	for c := range strings.SplitSeq(dir, "/") {
		if store.CheckName(c) != nil {
			return "", invalidf("bad folder %q", clip(dir))
		}
	}
	return dir, nil
}

// randomName is a random URL-safe name of n characters plus name's
// extension (when it has a short, harmless one).
func randomName(n int, name string) string {
	if n <= 0 {
		n = 9
	}
	ext := ""
	if i := strings.LastIndexByte(name, '.'); i > 0 && len(name)-i <= 16 && store.CheckName(name[i:]) == nil {
		ext = name[i:]
	}
	b := make([]byte, (n*6+7)/8+1)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)[:n] + ext
}

// urlPath is copyparty's "/<url-quoted vpath>" of a file.
func urlPath(v *store.Volume, rel string) string {
	p := path.Join(v.VPath, rel)
	parts := strings.Split(p, "/")
	for i, c := range parts {
		parts[i] = url.PathEscape(c)
	}
	return "/" + strings.Join(parts, "/")
}
