package store

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Store is the set of mounted volumes and the accounts that may use them.
// It is safe for concurrent use; its configuration is immutable after Open.
type Store struct {
	// vols are every volume mounted since Open, sorted by VPath depth,
	// deepest first; served are those the configuration (reloaded by
	// Reload) serves now, in the same order, for Resolve.
	vols    atomic.Pointer[[]*Volume] // mounted(); Reload adds to it
	served  atomic.Pointer[[]*Volume]
	acct    atomic.Pointer[accounts] // the accounts (Reload swaps them whole)
	authKey []byte
	histDir string // Config.Hist (--hist), as at Open
	log     *slog.Logger
	now     func() time.Time

	subsMu  sync.RWMutex
	subs    []func(Event)
	journal Journal

	janitor *janitor
	locks   map[string]*os.File // state folder → its held lock file (lock.go)

	claimsMu sync.Mutex
	claims   map[uint64]*fsClaims // per device: free space promised to unfinished uploads (claim.go)

	// crash recovery (recover.go)
	started   time.Time             // when Open ran (wall clock)
	runs      map[string]*histRun   // by state folder; nil when not ours
	alogs     map[string]*appendLog // by log path
	alogMu    sync.Mutex            // protects alogs
	crashMu   sync.Mutex            // protects temps and flocks
	temps     map[string]int        // work files being written, by absolute path
	flocks    map[fileID]*fileLock  // appends in progress, by file
	sweeps    sync.WaitGroup        // SweepLeftovers
	sweepCtx  context.Context       // cancelled by Close
	sweepStop context.CancelFunc

	ops opState  // file management (manage.go)
	dav davLocks // WebDAV locks (davlock.go)

	noGroupSync bool                                            // Config.NoGroupSync
	identify    func(sum []byte, size int64) (string, []string) // Config.Identify
	fsFlush     fsFlushes                                       // shared flushes of small files (groupsync.go)
	gc          gcState                                         // group commit of small uploads (gcommit.go)
}

// Volume is one folder mounted at a URL path. Its fields are immutable;
// its permissions and the flags Reload may change (LiveFlags) change only
// by Store.Reload.
type Volume struct {
	Src   string // absolute folder on disk
	VPath string // URL path without slashes at either end; "" is the root

	flags atomic.Pointer[Flags] // Flags(); replaced whole by Reload

	real string // Src with its symbolic links resolved, at mount (links.go)

	perms  atomic.Pointer[map[string]Perm] // user ("*": everyone) → what they may do
	root   *os.Root
	dir    *os.File // the folder root is opened on, for the fast open (fastopen_linux.go); nil: none
	hist   string   // absolute state folder; "" when it could not be made
	secret []byte   // per-volume key for file keys and collision suffixes
	store  *Store

	dirs   dirSyncs                 // group-committed folder fsyncs
	claims *fsClaims                // its file system's claimed free space (claim.go)
	seen   atomic.Pointer[freeSeen] // its free space as last read (claim.go)
	run    *histRun                 // the state folder's run lock; nil when not held (recover.go)

	// obj, when set, holds the volume's files (flag s3=, object.go);
	// objPre is their key prefix ("" or ending in "/").
	obj    ObjectStore
	objPre string
	objSec *objSecret // the bucket's secret of file keys (objsecret.go)

	// A view (Confine, ConfineFiles) is the folder base of the volume
	// outer, with root opened there; only, when not nil, are the only
	// names it reaches (a share of files).
	outer *Volume
	base  string
	only  []string
}

// HistName is the state folder's name inside a volume. Requests can never
// reach it, whatever the permissions.
const HistName = ".hist"

// Open mounts the configured volumes and starts the lifetime janitor.
func Open(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{
		authKey: make([]byte, 32),
		locks:   map[string]*os.File{},
		log:     cfg.Logger,
		now:     cfg.Now,
		started: time.Now(),
		runs:    map[string]*histRun{},
		alogs:   map[string]*appendLog{},
		temps:   map[string]int{},
		flocks:  map[fileID]*fileLock{},

		noGroupSync: cfg.NoGroupSync,
		identify:    cfg.Identify,
	}
	s.sweepCtx, s.sweepStop = context.WithCancel(context.Background())
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = s.log.With("pkg", "store")
	if s.now == nil {
		s.now = time.Now
	}
	if _, err := rand.Read(s.authKey); err != nil {
		return nil, err
	}
	ac, err := s.newAccounts(cfg)
	if err != nil {
		return nil, err
	}
	s.acct.Store(ac)
	s.histDir = cfg.Hist
	if cfg.Hist != "" {
		// --hist holds what the whole server keeps (shares.json) besides
		// the volumes' state folders: one server per --hist.
		if dir, err := filepath.Abs(cfg.Hist); err == nil && os.MkdirAll(dir, 0o700) == nil {
			writes := false
			for _, spec := range cfg.Volumes {
				for _, p := range spec.Perms {
					writes = writes || p&(PermWrite|PermMove|PermDelete) != 0
				}
			}
			if err := s.lockHist(dir, writes); err != nil {
				s.Close()
				return nil, err
			}
		}
	}
	var vols []*Volume
	s.vols.Store(&vols)
	for _, spec := range cfg.Volumes {
		v, err := s.mount(spec, cfg)
		if err != nil {
			s.Close()
			return nil, err
		}
		vols = append(vols, v)
		s.vols.Store(&vols) // for Close
	}
	if err := checkHistPlacement(vols); err != nil {
		s.Close()
		return nil, err
	}
	slices.SortStableFunc(vols, func(a, b *Volume) int { return depth(b.VPath) - depth(a.VPath) })
	s.vols.Store(&vols)
	served := slices.Clone(vols)
	s.served.Store(&served)
	s.ops.unpost = cfg.Unpost
	s.recoverVolumes(vols, vols)
	s.janitor = startJanitor(s)
	return s, nil
}

// volumeFlags are a volume's flags: its own over the global ones, with
// the defaults filled in.
func volumeFlags(global, own Flags) Flags {
	f := global.merge(own)
	if f.NRand == 0 {
		f.NRand = 9
	}
	return f
}

// Flags returns the volume's flags as they are now (a copy).
func (v *Volume) Flags() Flags {
	if f := v.flags.Load(); f != nil {
		return *f
	}
	return Flags{}
}

// setFlags replaces the volume's flags.
func (v *Volume) setFlags(f Flags) { v.flags.Store(&f) }

func depth(vp string) int {
	if vp == "" {
		return 0
	}
	return strings.Count(vp, "/") + 1
}

func (s *Store) mount(spec VolumeSpec, cfg Config) (*Volume, error) {
	src, err := filepath.Abs(spec.Src)
	if err != nil {
		return nil, fmt.Errorf("volume %q: %w", spec.Src, err)
	}
	fi, err := os.Stat(src)
	if err != nil {
		return nil, fmt.Errorf("volume %q: %w", spec.Src, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("volume %q: not a folder", spec.Src)
	}
	root, err := os.OpenRoot(src)
	if err != nil {
		return nil, fmt.Errorf("volume %q: %w", spec.Src, err)
	}
	real, err := filepath.EvalSymlinks(src)
	if err != nil {
		real = ""
	}
	v := &Volume{
		real:  real,
		Src:   src,
		VPath: spec.VPath,
		root:  root,
		dir:   volDir(src, root),
		store: s,
	}
	flags := volumeFlags(cfg.Global, spec.Flags)
	v.setPerms(spec.Perms)
	if flags.S3 != "" {
		if err := v.mountObjects(cfg, &flags); err != nil {
			v.closeRoot()
			return nil, fmt.Errorf("volume %q: %w", spec.Src, err)
		}
	}
	v.flags.Store(&flags)
	v.claims = s.claimsFor(src)
	hist := filepath.Join(src, HistName)
	switch {
	case flags.Hist != "":
		hist = flags.Hist
	case cfg.Hist != "":
		sum := sha256.Sum256([]byte(src))
		hist = filepath.Join(cfg.Hist, strings.ReplaceAll(v.VPath, "/", "+")+"-"+hex.EncodeToString(sum[:6]))
	}
	if hist, err = filepath.Abs(hist); err == nil {
		err = os.MkdirAll(hist, 0o700)
	}
	if err != nil {
		s.log.Warn("state folder unavailable; lifetimes and persistent file keys are off for this volume", "volume", "/"+v.VPath, "err", err)
	} else {
		v.hist = hist
		if err := s.lockHist(hist, v.Writable()); err != nil {
			v.closeRoot()
			return nil, err
		}
	}
	if v.secret, err = v.loadSecret(); err != nil {
		v.closeRoot()
		return nil, err
	}
	return v, nil
}

// recoverVolumes takes the state folders of vols (newly mounted; all are
// every volume mounted, them included) and recovers what a crash left in
// them, before they are served.
func (s *Store) recoverVolumes(vols, all []*Volume) {
	for _, v := range vols {
		s.claimHist(v)
	}
	for _, v := range vols {
		if l := s.appendLogFor(v); l != nil && !l.recovered {
			l.recovered = true
			s.recoverAppends(v, l)
		}
	}
	s.recoverOps(vols, all) // what a crash interrupted (manage_journal.go)
}

// mounted is every volume mounted since Open, deepest first.
func (s *Store) mounted() []*Volume {
	if p := s.vols.Load(); p != nil {
		return *p
	}
	return nil
}

// checkHistPlacement refuses a state folder that lies inside a volume
// under a path requests can reach: only folders named .hist are never
// served, so a --hist or hist= folder elsewhere inside a volume would be.
// It also refuses one state folder for volumes of different folders
// (hist=): its index is keyed by paths inside one folder, so their
// records would mix, and a search of one volume would name the other's
// files (volumes of one folder share it, as they share the files).
func checkHistPlacement(vols []*Volume) error {
	for i, v := range vols {
		if v.hist == "" {
			continue
		}
		for _, w := range vols[:i] {
			if w.hist == v.hist && !sameFolder(v, w) {
				return fmt.Errorf("volumes %q and %q share the state folder %q, but not their folder (%q and %q); give each folder its own hist=", "/"+w.VPath, "/"+v.VPath, v.hist, w.Src, v.Src)
			}
		}
		for _, w := range vols {
			rel, err := filepath.Rel(w.Src, v.hist)
			if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
				continue
			}
			if !slices.ContainsFunc(strings.Split(filepath.ToSlash(rel), "/"), func(c string) bool { return strings.EqualFold(c, HistName) }) {
				return fmt.Errorf("the state folder %q of volume %q lies inside volume %q, where it would be served; put it elsewhere or in a folder named %s", v.hist, v.Src, w.Src, HistName)
			}
		}
	}
	return nil
}

// sameFolder reports whether v and w serve one folder (by its real path
// when both are known).
func sameFolder(v, w *Volume) bool {
	if v.real != "" && w.real != "" {
		return v.real == w.real
	}
	return v.Src == w.Src
}

// loadSecret reads the volume's key from its state folder, creating it once.
func (v *Volume) loadSecret() ([]byte, error) {
	key := make([]byte, 32)
	if v.hist == "" {
		_, err := rand.Read(key)
		return key, err
	}
	name := filepath.Join(v.hist, "secret")
	if b, err := readStateFile(name, 4096); err == nil && len(b) == 64 {
		if _, err := hex.Decode(key, b); err == nil {
			return key, nil
		}
	}
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(name, []byte(hex.EncodeToString(key))); err != nil {
		// A full state folder must not keep the server from starting.
		v.store.log.Warn("cannot keep the volume's key in its state folder; its file keys and collision tags change at the next start", "volume", "/"+v.VPath, "err", err)
	}
	return key, nil
}

// writeFileAtomic writes a small state file outside any volume's root:
// temp file, fsync, rename, folder fsync.
func writeFileAtomic(name string, data []byte) (err error) {
	defer func() { err = stateErr(err, filepath.Dir(name)) }()
	f, err := os.CreateTemp(filepath.Dir(name), ".tmp-*")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), name); err != nil {
		return err
	}
	ok = true
	return syncDir(filepath.Dir(name))
}

func syncDir(name string) error {
	d, err := os.OpenFile(name, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}

// Close stops the janitor and closes every volume. It records a clean
// stop in each state folder (unless a crash's leftovers are still to be
// swept).
func (s *Store) Close() error {
	if s.janitor != nil {
		s.janitor.stop()
	}
	s.stopLoop() // group commit's checkpoints (StopSmall ran the last one)
	s.sweepStop()
	s.sweeps.Wait()
	s.alogMu.Lock()
	for _, l := range s.alogs {
		l.close()
	}
	s.alogMu.Unlock()
	var first error
	for _, v := range s.mounted() {
		if err := v.closeRoot(); err != nil && first == nil {
			first = err
		}
	}
	s.releaseHists()
	s.unlock()
	return first
}

// Volumes returns the volumes served, deepest mount first.
func (s *Store) Volumes() []*Volume { return slices.Clone(*s.served.Load()) }

// Mounted returns every volume mounted since Open, served or not (Reload
// stops serving a volume, it never unmounts it), deepest mount first.
func (s *Store) Mounted() []*Volume { return slices.Clone(s.mounted()) }

// PasswordKey is the keyed digest accounts are looked up by: what a
// caller may remember a password by without keeping the password (the
// key is random per process and never stored).
func (s *Store) PasswordKey(pw string) [32]byte { return s.pwKey(pw) }

func (s *Store) pwKey(pw string) [32]byte {
	m := hmac.New(sha256.New, s.authKey)
	m.Write([]byte(pw))
	var k [32]byte
	m.Sum(k[:0])
	return k
}

// Authenticate returns the user whose password is pw. The lookup is by a
// keyed digest, so its timing reveals nothing about stored passwords. With
// hashed passwords (Config.PwHash) a password is hashed once and then
// known by its keyed digest.
func (s *Store) Authenticate(pw string) (user string, ok bool) {
	return s.AuthenticateContext(context.Background(), pw)
}

// Resolve finds the volume that serves the URL path parts (already decoded
// and validated) and the path inside it. v is nil when no volume covers the
// path (a virtual folder above mounts, or nothing at all).
func (s *Store) Resolve(parts []string) (v *Volume, rel string) {
	for _, vol := range *s.served.Load() {
		n := depth(vol.VPath)
		if n > len(parts) {
			continue
		}
		if n > 0 && strings.Join(parts[:n], "/") != vol.VPath {
			continue
		}
		return vol, strings.Join(parts[n:], "/")
	}
	return nil, ""
}

// MountsBelow returns the names of the folders directly below the URL path
// parts that lead to other volumes, with the volumes under each name.
func (s *Store) MountsBelow(parts []string) map[string][]*Volume {
	prefix := strings.Join(parts, "/")
	out := map[string][]*Volume{}
	for _, vol := range *s.served.Load() {
		rest, ok := vol.VPath, true
		if prefix != "" {
			rest, ok = strings.CutPrefix(vol.VPath, prefix+"/")
		}
		if !ok || rest == "" {
			continue
		}
		name, _, _ := strings.Cut(rest, "/")
		out[name] = append(out[name], vol)
	}
	return out
}

// Perms returns what user may do in v; "*" grants apply to everyone.
// An empty user is anonymous.
func (v *Volume) Perms(user string) Perm {
	perms := v.permMap()
	p := perms["*"]
	if user != "" {
		p |= perms[user]
	}
	return p
}

// permMap is the volume's permissions (nil for a Volume not made by
// mount, as in tests).
func (v *Volume) permMap() map[string]Perm {
	if p := v.perms.Load(); p != nil {
		return *p
	}
	return nil
}

// setPerms replaces the volume's permissions.
func (v *Volume) setPerms(p map[string]Perm) {
	p = maps.Clone(p)
	if p == nil {
		p = map[string]Perm{}
	}
	v.perms.Store(&p)
}

// FileKey returns the access key for a file (volume flag fk), derived from
// the volume's secret, the path, size and inode; "" when the volume has no fk.
func (v *Volume) FileKey(rel string, fi fs.FileInfo) string {
	if v.Flags().FK == 0 || fi == nil {
		return ""
	}
	if v.outer != nil {
		return v.outer.FileKey(v.outerRel(rel), fi) // the key of the file's own URL
	}
	secret, msg, ok := v.fileKeyOf(rel, fi)
	if !ok {
		return ""
	}
	m := hmac.New(sha512.New, secret)
	m.Write([]byte(msg))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))[:v.Flags().FK]
}

// KeyOK reports whether a user with permissions p may open the file at
// rel with key: always without volume flag fk or with r, else only with
// the file's key (compared in constant time).
func (v *Volume) KeyOK(p Perm, rel string, fi fs.FileInfo, key string) bool {
	if v.Flags().FK == 0 || p.Has(PermRead) {
		return true
	}
	want := v.FileKey(rel, fi)
	return want != "" && subtle.ConstantTimeCompare([]byte(key), []byte(want)) == 1
}

// clientTag is copyparty's 8-character keyed hash of a client address, used
// in collision suffixes so uploaders can be told apart without showing IPs.
func (v *Volume) clientTag(ip string) string {
	m := hmac.New(sha512.New, v.secret)
	m.Write([]byte(ip))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))[:8]
}

// NowString formats t as copyparty's seconds with six decimals.
func NowString(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMicro())/1e6, 'f', 6, 64)
}

// closeRoot closes the volume's root and the fast open's descriptor.
func (v *Volume) closeRoot() error {
	if v.dir != nil {
		v.dir.Close()
	}
	return v.root.Close()
}
