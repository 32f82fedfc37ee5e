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
	// Skipped are volumes of the new configuration this process cannot
	// take up without a restart (a folder it never mounted, a read-only
	// volume made writable), each with the reason.
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
	if old.S3 != "" { // mount turned the index off on object storage (object.go)
		new.E2D, new.E2DS, new.E2DSA, new.E2T, new.E2TS, new.E2TSR = false, false, false, false, false, false
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

// Reload takes up a new configuration: the accounts and every volume's
// permissions are replaced, a volume left out stops being served (new
// requests no longer resolve to it; requests already running, and its
// unfinished uploads, which stay in its state folder, are untouched), and
// a volume mounted before serves again, and the flags of the volumes
// served change (those that only rule new requests; reloadFlags). Mounting
// a folder this process never mounted needs a restart, as do changes of
// the flags that place state or run an index (restartFlags) and of
// server-wide options: those are reported in Skipped and Restart, or
// ignored. An invalid configuration changes nothing.
func (s *Store) Reload(cfg Config) (ReloadResult, error) {
	var res ReloadResult
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	ac, err := s.newAccounts(cfg)
	if err != nil {
		return res, err
	}
	type kept struct {
		v     *Volume
		perms map[string]Perm
		flags Flags
	}
	var keep []kept
	for _, spec := range cfg.Volumes {
		src, err := filepath.Abs(spec.Src)
		if err != nil {
			return res, fmt.Errorf("volume %q: %w", spec.Src, err)
		}
		i := slices.IndexFunc(s.vols, func(v *Volume) bool { return v.VPath == spec.VPath && v.Src == src })
		if i < 0 {
			res.Skipped = append(res.Skipped, fmt.Sprintf("/%s (%s): not mounted by this process; restart to serve it", spec.VPath, src))
			continue
		}
		v := s.vols[i]
		if !v.Writable() && writable(spec.Perms) && v.hist != "" {
			// Its state folder lock was taken shared, for a reader.
			res.Skipped = append(res.Skipped, fmt.Sprintf("/%s: read-only when mounted; restart to make it writable", spec.VPath))
			continue
		}
		flags, changed, restart := reloadFlags(v.Flags(), volumeFlags(cfg.Global, spec.Flags))
		if v.obj != nil {
			if err := checkObjectFlags(flags); err != nil {
				return res, fmt.Errorf("volume %q: %w", spec.Src, err)
			}
		}
		if len(changed) > 0 {
			res.Changed = append(res.Changed, "/"+spec.VPath+": "+strings.Join(changed, " "))
		}
		if len(restart) > 0 {
			res.Restart = append(res.Restart, "/"+spec.VPath+": "+strings.Join(restart, " "))
		}
		keep = append(keep, kept{v, spec.Perms, flags})
	}
	old := *s.served.Load()
	var served []*Volume
	for _, k := range keep {
		served = append(served, k.v)
	}
	slices.SortStableFunc(served, func(a, b *Volume) int { return depth(b.VPath) - depth(a.VPath) })
	for _, v := range old {
		if !slices.Contains(served, v) {
			res.Removed = append(res.Removed, "/"+v.VPath)
		}
	}
	for _, v := range served {
		if !slices.Contains(old, v) {
			res.Restored = append(res.Restored, "/"+v.VPath)
		}
		res.Served = append(res.Served, "/"+v.VPath)
	}
	for _, k := range keep {
		if !maps.Equal(k.v.permMap(), k.perms) {
			k.v.setPerms(k.perms)
		}
		if k.v.Flags() != k.flags {
			k.v.setFlags(k.flags)
		}
	}
	s.acct.Store(ac)
	s.served.Store(&served)
	res.Accounts = len(ac.users)
	s.log.Info("configuration reloaded", "accounts", res.Accounts, "volumes", strings.Join(res.Served, " "), "removed", strings.Join(res.Removed, " "), "restored", strings.Join(res.Restored, " "))
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
	return res, nil
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
