package store

import (
	"errors"
	"fmt"
	"log/slog"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Config is everything store needs to open its volumes.
type Config struct {
	// Accounts maps user names to passwords. Passwords identify users
	// (copyparty's rule), so they must be unique.
	Accounts []Account
	// Volumes to mount. No volumes is an error; main supplies the default.
	Volumes []VolumeSpec
	// Hist, when set, moves every volume's state folder below this folder
	// (one subfolder per volume) instead of <volume>/.hist.
	Hist string
	// Global volume flags applied to every volume before its own (e.g. --dedup).
	Global Flags
	// Logger receives store's log lines; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now. Tests set it.
	Now func() time.Time
	// Unpost is how long after an upload its uploader may delete it
	// without the d permission (copyparty's --unpost); 0 turns it off.
	Unpost time.Duration
	// Objects opens the object store of a volume with flag s3=BUCKET[/PREFIX]
	// (main wires package s3 here); nil refuses such volumes.
	Objects func(bucket string) (ObjectStore, error)
	// PwHash, when set, hashes passwords (--ah-alg): accounts hold hashes
	// (or clear passwords, hashed at Open) and clients' passwords are
	// hashed to be checked.
	PwHash *PwHash
	// NoGroupSync gives every published file its own fsync; by default a
	// small file (≤ SmallFile) shares one syncfs of its file system with
	// the small uploads finishing at the same time (groupsync.go).
	NoGroupSync bool
	// Identify, when set, gives the up2k identity (wark and chunk hashes)
	// of an uploaded file from the SHA-512 of all its bytes and its size,
	// or "" when that does not determine it (a file of more than one
	// chunk). main wires up2k's rule; a PUT or multipart upload hashed
	// with sha512 then carries it on its Created event, so the index
	// need not read and hash the file again.
	Identify func(sum []byte, size int64) (wark string, chunks []string)
}

// Account is a user name and password.
type Account struct {
	User, Pass string
}

// VolumeSpec is one -v argument, parsed.
type VolumeSpec struct {
	Src   string          // folder on disk
	VPath string          // URL path without leading or trailing slash; "" is the root
	Perms map[string]Perm // user name ("*" = everyone) → permissions
	Flags Flags
}

// Flags are copyparty's volume flags that hoard knows. Zero values mean off.
type Flags struct {
	Lifetime time.Duration // lifetime=S: uploads are deleted S seconds after upload
	SzMin    int64         // sz=MIN-MAX: size bounds of an upload, bytes
	SzMax    int64
	DF       int64 // df=N: bytes to keep free (a plain number is GiB)
	FK       int   // fk[=N]: length of file keys required from g-only users; 0 = off
	NoDupe   bool  // nodupe: refuse uploads whose content already exists
	Dedup    bool  // dedup: link duplicates instead of copying
	Rand     bool  // rand: force random names on uploads
	NRand    int   // nrand=N: length of forced random names (default 9)
	NoSub    bool  // nosub: uploads only into the volume's root folder
	E2D      bool  // e2d…: index this volume
	E2DS     bool
	E2DSA    bool
	E2T      bool
	E2TS     bool
	E2TSR    bool
	Hist     string // hist=DIR: this volume's state folder
	PutCK    string // put_ck=ALG: default checksum of PUT uploads
	BupCK    string // bup_ck=ALG: default checksum of multipart uploads
	S3       string // s3=BUCKET[/PREFIX]: the volume's files are objects there (object.go); per volume only
}

var userRE = regexp.MustCompile(`^[A-Za-z0-9_.@+-]{1,64}$`)

// ParseAccount parses an -a USER:PASS argument. Its errors never quote
// the password (they end up in logs): an argument without a colon may be
// a password alone.
func ParseAccount(s string) (Account, error) {
	user, pass, ok := strings.Cut(s, ":")
	if !ok {
		return Account{}, errors.New("an account without a colon: want USER:PASS")
	}
	if !userRE.MatchString(user) || user == "*" {
		return Account{}, fmt.Errorf("account: bad user name %q (letters, digits, _ . @ + - only) before the password", user)
	}
	if pass == "" {
		return Account{}, fmt.Errorf("account %q: empty password", user)
	}
	return Account{User: user, Pass: pass}, nil
}

// ParseVolume parses an -v SRC:DST:PERMS[:PERMS...][:c,FLAG[=VAL]...] argument.
// The error names the part that is wrong.
func ParseVolume(s string) (VolumeSpec, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 3 {
		return VolumeSpec{}, fmt.Errorf("volume %q: want SRC:DST:PERMS (at least two colons)", s)
	}
	spec := VolumeSpec{Src: parts[0], Perms: map[string]Perm{}}
	if spec.Src == "" {
		return VolumeSpec{}, fmt.Errorf("volume %q: empty SRC folder", s)
	}
	vp, err := cleanVPath(parts[1])
	if err != nil {
		return VolumeSpec{}, fmt.Errorf("volume %q: DST %q: %w", s, parts[1], err)
	}
	spec.VPath = vp
	for _, p := range parts[2:] {
		if rest, ok := strings.CutPrefix(p, "c,"); ok {
			if err := spec.Flags.parse(rest); err != nil {
				return VolumeSpec{}, fmt.Errorf("volume %q: flags %q: %w", s, p, err)
			}
			continue
		}
		if p == "" {
			continue // copyparty's "-v .::" style empty permission set
		}
		letters, users, _ := strings.Cut(p, ",")
		perm, err := ParsePerm(letters)
		if err != nil {
			return VolumeSpec{}, fmt.Errorf("volume %q: permissions %q: %w", s, p, err)
		}
		names := []string{"*"}
		if users != "" {
			names = strings.Split(users, ",")
		}
		for _, u := range names {
			if u != "*" && !userRE.MatchString(u) {
				return VolumeSpec{}, fmt.Errorf("volume %q: permissions %q: bad user name %q", s, p, u)
			}
			spec.Perms[u] |= perm
		}
	}
	return spec, nil
}

func cleanVPath(s string) (string, error) {
	s = strings.Trim(s, "/")
	if s == "" {
		return "", nil
	}
	for _, c := range strings.Split(s, "/") {
		if err := checkName(c); err != nil {
			return "", err
		}
	}
	return path.Clean(s), nil
}

// parse reads a comma list of flags, "a,b=3,c".
func (f *Flags) parse(list string) error {
	for _, item := range strings.Split(list, ",") {
		if item == "" {
			continue
		}
		name, val, hasVal := strings.Cut(item, "=")
		if err := f.set(name, val, hasVal); err != nil {
			return fmt.Errorf("%s: %w", item, err)
		}
	}
	return nil
}

func (f *Flags) set(name, val string, hasVal bool) error {
	boolFlag := func(p *bool) error {
		if hasVal {
			return errors.New("takes no value")
		}
		*p = true
		return nil
	}
	switch name {
	case "lifetime":
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil || n <= 0 {
			return errors.New("want a positive number of seconds")
		}
		f.Lifetime = time.Duration(n) * time.Second
	case "sz":
		lo, hi, ok := strings.Cut(val, "-")
		if !ok {
			return errors.New("want MIN-MAX, e.g. 1k-3g")
		}
		var err error
		if f.SzMin, err = ParseSize(lo, 1); err != nil {
			return err
		}
		if f.SzMax, err = ParseSize(hi, 1); err != nil {
			return err
		}
		if f.SzMax < f.SzMin {
			return errors.New("MAX is below MIN")
		}
	case "df":
		n, err := ParseSize(val, 1<<30)
		if err != nil {
			return err
		}
		f.DF = n
	case "fk":
		f.FK = 8
		if hasVal {
			n, err := strconv.Atoi(val)
			if err != nil || n < 4 || n > 64 {
				return errors.New("want a key length from 4 to 64")
			}
			f.FK = n
		}
	case "nrand":
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 || n > 128 {
			return errors.New("want a length from 1 to 128")
		}
		f.NRand = n
	case "hist":
		if val == "" {
			return errors.New("want a folder")
		}
		f.Hist = val
	case "put_ck", "bup_ck":
		if !ValidChecksum(val) {
			return fmt.Errorf("unknown checksum %q (valid: %s)", val, strings.Join(Checksums, ", "))
		}
		if name == "put_ck" {
			f.PutCK = val
		} else {
			f.BupCK = val
		}
	case "s3":
		if _, _, err := ParseS3Target(val); err != nil {
			return err
		}
		f.S3 = val
	case "nodupe":
		return boolFlag(&f.NoDupe)
	case "dedup":
		return boolFlag(&f.Dedup)
	case "rand":
		return boolFlag(&f.Rand)
	case "nosub":
		return boolFlag(&f.NoSub)
	case "e2d":
		return boolFlag(&f.E2D)
	case "e2ds":
		f.E2D = true
		return boolFlag(&f.E2DS)
	case "e2dsa":
		f.E2D, f.E2DS = true, true
		return boolFlag(&f.E2DSA)
	case "e2t":
		f.E2D = true
		return boolFlag(&f.E2T)
	case "e2ts":
		f.E2D, f.E2T = true, true
		return boolFlag(&f.E2TS)
	case "e2tsr":
		f.E2D, f.E2T, f.E2TS = true, true, true
		return boolFlag(&f.E2TSR)
	default:
		return errors.New("unknown volume flag")
	}
	return nil
}

// merge returns g with every flag set in f taking precedence.
func (g Flags) merge(f Flags) Flags {
	out := g
	if f.Lifetime != 0 {
		out.Lifetime = f.Lifetime
	}
	if f.SzMax != 0 || f.SzMin != 0 {
		out.SzMin, out.SzMax = f.SzMin, f.SzMax
	}
	if f.DF != 0 {
		out.DF = f.DF
	}
	if f.FK != 0 {
		out.FK = f.FK
	}
	if f.NRand != 0 {
		out.NRand = f.NRand
	}
	if f.Hist != "" {
		out.Hist = f.Hist
	}
	if f.PutCK != "" {
		out.PutCK = f.PutCK
	}
	if f.BupCK != "" {
		out.BupCK = f.BupCK
	}
	out.S3 = f.S3 // never global: one bucket prefix is one volume
	out.NoDupe = out.NoDupe || f.NoDupe
	out.Dedup = out.Dedup || f.Dedup
	out.Rand = out.Rand || f.Rand
	out.NoSub = out.NoSub || f.NoSub
	out.E2D = out.E2D || f.E2D
	out.E2DS = out.E2DS || f.E2DS
	out.E2DSA = out.E2DSA || f.E2DSA
	out.E2T = out.E2T || f.E2T
	out.E2TS = out.E2TS || f.E2TS
	out.E2TSR = out.E2TSR || f.E2TSR
	return out
}

// ParseSize parses a size such as 512, 4k, 1.5m, 2g or 100b (1024-based
// units b/k/m/g/t, case-insensitive, an optional trailing "ib"/"b"). A bare
// number is multiplied by unit.
func ParseSize(s string, unit int64) (int64, error) {
	orig := s
	s = strings.ToLower(strings.TrimSpace(s))
	mult := unit
	if t, ok := strings.CutSuffix(s, "ib"); ok {
		s = t
	} else if t, ok := strings.CutSuffix(s, "b"); ok {
		s, mult = t, 1
	}
	if s != "" {
		if i := strings.IndexByte("kmgt", s[len(s)-1]); i >= 0 {
			s, mult = s[:len(s)-1], int64(1)<<(10*(i+1))
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("bad size %q (want e.g. 512, 4k, 1.5m, 2g)", orig)
	}
	return int64(f * float64(mult)), nil
}

// Validate checks the whole configuration: unique users and passwords, users
// named in permissions exist, no two volumes at one URL path.
func (c *Config) Validate() error {
	if len(c.Volumes) == 0 {
		return errors.New("no volumes")
	}
	users := map[string]bool{}
	pws := map[string]string{}
	for _, a := range c.Accounts {
		if users[a.User] {
			return fmt.Errorf("account %q defined twice", a.User)
		}
		if other, ok := pws[a.Pass]; ok {
			return fmt.Errorf("accounts %q and %q have the same password (passwords identify users and must be unique)", other, a.User)
		}
		users[a.User] = true
		pws[a.Pass] = a.User
	}
	at := map[string]string{}
	for _, v := range c.Volumes {
		if prev, ok := at[v.VPath]; ok {
			return fmt.Errorf("volumes %q and %q are both mounted at /%s", prev, v.Src, v.VPath)
		}
		at[v.VPath] = v.Src
		for u := range v.Perms {
			if u != "*" && !users[u] {
				return fmt.Errorf("volume %q gives permissions to %q, who has no account (-a %s:PASS)", v.Src, u, u)
			}
		}
	}
	return nil
}
