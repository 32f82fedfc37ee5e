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
}

// Reload takes up a new configuration: the accounts and every volume's
// permissions are replaced, a volume left out stops being served (new
// requests no longer resolve to it; requests already running, and its
// unfinished uploads, which stay in its state folder, are untouched), and
// a volume mounted before serves again. Mounting a folder this process
// never mounted needs a restart, as do changes of volume flags and of
// server-wide options: those are reported in Skipped or ignored. An
// invalid configuration changes nothing.
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
		keep = append(keep, kept{v, spec.Perms})
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
	}
	s.acct.Store(ac)
	s.served.Store(&served)
	res.Accounts = len(ac.users)
	s.log.Info("configuration reloaded", "accounts", res.Accounts, "volumes", strings.Join(res.Served, " "), "removed", strings.Join(res.Removed, " "), "restored", strings.Join(res.Restored, " "))
	for _, sk := range res.Skipped {
		s.log.Warn("reload: volume not taken up", "why", sk)
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
