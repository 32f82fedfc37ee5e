package store

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// accounts are the users and how their passwords are checked. Reload
// swaps them whole.
type accounts struct {
	users  map[[32]byte]string // keyed digest of the password (or of its hash) → user
	hashed *hashAuth           // with --ah-alg: verifies passwords against hashes (pwhash.go)
}

// newAccounts builds cfg's accounts.
func (s *Store) newAccounts(cfg Config) (*accounts, error) {
	if cfg.PwHash != nil {
		return s.hashAccounts(cfg.PwHash, cfg.Accounts)
	}
	ac := &accounts{users: map[[32]byte]string{}}
	for _, a := range cfg.Accounts {
		ac.users[s.pwKey(a.Pass)] = a.User
	}
	return ac, nil
}

// ReloadResult says what a Reload changed and what it could not.
type ReloadResult struct {
	Accounts int      // accounts now
	Served   []string // URL paths of the volumes served now
	Removed  []string // volumes no longer served (their state stays)
	Restored []string // volumes served again
	Added    []string // volumes mounted by the reload
	// Skipped are volumes of the new configuration this process cannot
	// take up without a restart (a read-only volume made writable), each
	// with the reason.
	Skipped []string
	// Changed are the volumes whose flags changed ("/pub: sz lifetime");
	// Restart the flag changes that need a restart ("/pub: e2ds"), whose
	// old values stay.
	Changed, Restart []string
}

// restartFlags are the volume flags a reload cannot change on a volume
// being served, each with how to tell a change: where its state lives
// (hist, s3) and what runs for it (the index and its scans: e2d…).
var restartFlags = []struct {
	name    string
	differs func(a, b Flags) bool
	keep    func(dst *Flags, old Flags)
}{
	{"hist", func(a, b Flags) bool { return a.Hist != b.Hist }, func(d *Flags, o Flags) { d.Hist = o.Hist }},
	{"s3", func(a, b Flags) bool { return a.S3 != b.S3 }, func(d *Flags, o Flags) { d.S3 = o.S3 }},
	{"e2d", func(a, b Flags) bool { return a.E2D != b.E2D }, func(d *Flags, o Flags) { d.E2D = o.E2D }},
	{"e2ds", func(a, b Flags) bool { return a.E2DS != b.E2DS }, func(d *Flags, o Flags) { d.E2DS = o.E2DS }},
	{"e2dsa", func(a, b Flags) bool { return a.E2DSA != b.E2DSA }, func(d *Flags, o Flags) { d.E2DSA = o.E2DSA }},
	{"e2t", func(a, b Flags) bool { return a.E2T != b.E2T }, func(d *Flags, o Flags) { d.E2T = o.E2T }},
	{"e2ts", func(a, b Flags) bool { return a.E2TS != b.E2TS }, func(d *Flags, o Flags) { d.E2TS = o.E2TS }},
	{"e2tsr", func(a, b Flags) bool { return a.E2TSR != b.E2TSR }, func(d *Flags, o Flags) { d.E2TSR = o.E2TSR }},
}

// liveFlags name the flags a reload changes at once, for the changes
// it reports.
var liveFlags = []struct {
	name    string
	differs func(a, b Flags) bool
}{
	{"lifetime", func(a, b Flags) bool { return a.Lifetime != b.Lifetime }},
	{"sz", func(a, b Flags) bool { return a.SzMin != b.SzMin || a.SzMax != b.SzMax }},
	{"df", func(a, b Flags) bool { return a.DF != b.DF }},
	{"fk", func(a, b Flags) bool { return a.FK != b.FK }},
	{"nodupe", func(a, b Flags) bool { return a.NoDupe != b.NoDupe }},
	{"dedup", func(a, b Flags) bool { return a.Dedup != b.Dedup }},
	{"rand", func(a, b Flags) bool { return a.Rand != b.Rand }},
	{"nrand", func(a, b Flags) bool { return a.NRand != b.NRand }},
	{"nosub", func(a, b Flags) bool { return a.NoSub != b.NoSub }},
	{"put_ck", func(a, b Flags) bool { return a.PutCK != b.PutCK }},
	{"bup_ck", func(a, b Flags) bool { return a.BupCK != b.BupCK }},
}

// reloadFlags is what a reload makes of a served volume's flags: the new
// ones, but for those that need a restart (named in restart), which keep
// their old values; changed names the flags that do change.
func reloadFlags(old, new Flags) (out Flags, changed, restart []string) {
	if old.S3 != "" { // mount turned tag indexing off on object storage (object.go)
		new.E2T, new.E2TS, new.E2TSR = false, false, false
	}
	out = new
	for _, f := range restartFlags {
		if f.differs(old, new) {
			restart = append(restart, f.name)
			f.keep(&out, old)
		}
	}
	for _, f := range liveFlags {
		if f.differs(old, out) {
			changed = append(changed, f.name)
		}
	}
	return out, changed, restart
}

// Reload takes up a new configuration at once (PrepareReload, then
// Commit): for a caller with nothing to open for the volumes it adds.
func (s *Store) Reload(cfg Config) (ReloadResult, error) {
	p, err := s.PrepareReload(cfg)
	if err != nil {
		return ReloadResult{}, err
	}
	return p.Commit(), nil
}

// PendingReload is a configuration read and checked, with the volumes new
// to this process mounted (their state folders locked, what a crash left
// in them recovered) but not served: the caller opens what it runs for
// them (Added), then Commit serves the new configuration, or Abort
// unmounts them and the configuration served stays.
type PendingReload struct {
	s     *Store
	res   ReloadResult
	ac    *accounts
	keep  []kept
	added []*Volume
	all   []*Volume // every volume mounted, the added ones included
	locks []string  // state folder locks taken for the added volumes
	runs  []string  // run files claimed for them (recover.go)
	alogs []string  // append logs opened for them
	done  bool
}

type kept struct {
	v     *Volume
	perms map[string]Perm
	flags Flags
}

// Added are the volumes the reload mounts (not served until Commit).
func (p *PendingReload) Added() []*Volume { return slices.Clone(p.added) }

// PrepareReload reads a new configuration: the accounts and every
// volume's permissions are to be replaced, a volume left out stops being
// served (new requests no longer resolve to it; requests already running,
// and its unfinished uploads, which stay in its state folder, are
// untouched), a volume mounted before serves again, a volume new to this
// process is mounted as at start, and the flags of the volumes served
// change (those that only rule new requests; reloadFlags). Changes of the
// flags that place state or run an index on a volume served
// (restartFlags) and of server-wide options need a restart: those are
// reported in Restart, or ignored. An invalid configuration, or a new
// volume that cannot be mounted, changes nothing.
func (s *Store) PrepareReload(cfg Config) (_ *PendingReload, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Hist = s.histDir // --hist needs a restart
	ac, err := s.newAccounts(cfg)
	if err != nil {
		return nil, err
	}
	p := &PendingReload{s: s, ac: ac}
	defer func() {
		if err != nil {
			p.Abort()
		}
	}()
	res := &p.res
	mounted := s.mounted()
	hadLocks := maps.Clone(s.locks)
	var newSpecs []VolumeSpec
	for _, spec := range cfg.Volumes {
		src, err := filepath.Abs(spec.Src)
		if err != nil {
			return nil, fmt.Errorf("volume %q: %w", spec.Src, err)
		}
		i := slices.IndexFunc(mounted, func(v *Volume) bool { return v.VPath == spec.VPath && v.Src == src })
		if i < 0 {
			newSpecs = append(newSpecs, spec)
			continue
		}
		v := mounted[i]
		if !v.Writable() && writable(spec.Perms) && v.hist != "" {
			// Its state folder lock was taken shared, for a reader.
			res.Skipped = append(res.Skipped, fmt.Sprintf("/%s: read-only when mounted; restart to make it writable", spec.VPath))
			continue
		}
		flags, changed, restart := reloadFlags(v.Flags(), volumeFlags(cfg.Global, spec.Flags))
		if v.obj != nil {
			if err := checkObjectFlags(flags); err != nil {
				return nil, fmt.Errorf("volume %q: %w", spec.Src, err)
			}
		}
		if len(changed) > 0 {
			res.Changed = append(res.Changed, "/"+spec.VPath+": "+strings.Join(changed, " "))
		}
		if len(restart) > 0 {
			res.Restart = append(res.Restart, "/"+spec.VPath+": "+strings.Join(restart, " "))
		}
		p.keep = append(p.keep, kept{v, spec.Perms, flags})
	}
	for _, spec := range newSpecs {
		v, err := s.mount(spec, cfg)
		for dir := range s.locks {
			if _, ok := hadLocks[dir]; !ok && !slices.Contains(p.locks, dir) {
				p.locks = append(p.locks, dir)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("volume /%s: %w", spec.VPath, err)
		}
		p.added = append(p.added, v)
		p.keep = append(p.keep, kept{v, spec.Perms, v.Flags()})
	}
	p.all = append(slices.Clone(mounted), p.added...)
	slices.SortStableFunc(p.all, func(a, b *Volume) int { return depth(b.VPath) - depth(a.VPath) })
	if err := checkHistPlacement(p.all); err != nil {
		return nil, err
	}
	if len(p.added) > 0 {
		hadRuns := maps.Clone(s.runs)
		s.alogMu.Lock()
		hadLogs := maps.Clone(s.alogs)
		s.alogMu.Unlock()
		s.recoverVolumes(p.added, p.all)
		for h := range s.runs {
			if _, ok := hadRuns[h]; !ok {
				p.runs = append(p.runs, h)
			}
		}
		s.alogMu.Lock()
		for l := range s.alogs {
			if _, ok := hadLogs[l]; !ok {
				p.alogs = append(p.alogs, l)
			}
		}
		s.alogMu.Unlock()
	}
	return p, nil
}

// Abort unmounts the volumes the reload added; the configuration served
// stays. It does nothing after Commit.
func (p *PendingReload) Abort() {
	if p.done {
		return
	}
	p.done = true
	s := p.s
	for _, v := range p.added {
		v.closeRoot()
	}
	s.alogMu.Lock()
	for _, name := range p.alogs {
		if l := s.alogs[name]; l != nil {
			l.close()
		}
		delete(s.alogs, name)
	}
	s.alogMu.Unlock()
	for _, h := range p.runs {
		if r := s.runs[h]; r != nil {
			if !r.unclean {
				writeRun(r.f, runStopped)
			}
			r.f.Close()
		}
		delete(s.runs, h)
	}
	for _, dir := range p.locks {
		s.unlockDir(dir)
	}
}

// Commit serves the new configuration: the added volumes join the
// mounted ones, then the volumes served, the accounts and the flags are
// replaced, each swap atomic (a request resolves against the old set or
// the new one, never a half-made one).
func (p *PendingReload) Commit() ReloadResult {
	if p.done {
		return p.res
	}
	p.done = true
	s, res := p.s, &p.res
	if len(p.added) > 0 {
		all := p.all
		s.vols.Store(&all)
		if s.janitor != nil {
			for _, v := range p.added {
				s.janitor.load(v)
			}
			s.janitor.poke()
		}
	}
	old := *s.served.Load()
	var served []*Volume
	for _, k := range p.keep {
		served = append(served, k.v)
	}
	slices.SortStableFunc(served, func(a, b *Volume) int { return depth(b.VPath) - depth(a.VPath) })
	for _, v := range old {
		if !slices.Contains(served, v) {
			res.Removed = append(res.Removed, "/"+v.VPath)
		}
	}
	for _, v := range served {
		if slices.Contains(p.added, v) {
			res.Added = append(res.Added, "/"+v.VPath)
		} else if !slices.Contains(old, v) {
			res.Restored = append(res.Restored, "/"+v.VPath)
		}
		res.Served = append(res.Served, "/"+v.VPath)
	}
	for _, k := range p.keep {
		if !maps.Equal(k.v.permMap(), k.perms) {
			k.v.setPerms(k.perms)
		}
		if k.v.Flags() != k.flags {
			k.v.setFlags(k.flags)
		}
	}
	s.acct.Store(p.ac)
	s.served.Store(&served)
	res.Accounts = len(p.ac.users)
	s.log.Info("configuration reloaded", "accounts", res.Accounts, "volumes", strings.Join(res.Served, " "), "added", strings.Join(res.Added, " "), "removed", strings.Join(res.Removed, " "), "restored", strings.Join(res.Restored, " "))
	for _, sk := range res.Skipped {
		s.log.Warn("reload: volume not taken up", "why", sk)
	}
	for _, c := range res.Changed {
		s.log.Info("reload: volume flags changed", "flags", c)
	}
	for _, r := range res.Restart {
		vp, names, _ := strings.Cut(r, ": ")
		s.log.Warn("reload: needs a restart: "+names+"; the old values stay until then", "volume", vp)
	}
	return *res
}

// writable reports whether perms let anyone change files.
func writable(perms map[string]Perm) bool {
	for _, p := range perms {
		if p&(PermWrite|PermMove|PermDelete) != 0 {
			return true
		}
	}
	return false
}

// poke wakes the janitor to look at its expiries again.
func (j *janitor) poke() {
	select {
	case j.kick <- struct{}{}:
	default:
	}
}
