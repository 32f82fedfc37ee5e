package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// fixtures is the generated data every target serves: a big random file,
// many small random files and a search corpus, all under dir/hb-fix, all a
// function of the seed and the sizes. Uploads go to dir/hb-up/<target>/.
type fixtures struct {
	cfg     *config
	dir     string // served root
	root    string // dir/hb-fix
	upRoot  string // dir/hb-up
	created bool   // made by this run (so removed by it)
	big     *os.File
	corpus  []corpusFile
	nonce   string // distinguishes this run's uploads from earlier runs'
}

type corpusFile struct {
	rel  string // path below the served root
	size int64
	mt   time.Time
}

const fixDir = "hb-fix"

// words are the vocabulary of the search corpus's file and folder names.
var words = []string{"apple", "blue", "whale", "report", "annual", "river", "stone", "garden",
	"falcon", "copper", "winter", "summer", "delta", "orbit", "pixel", "vector", "meadow", "harbor",
	"lantern", "quartz", "cedar", "ember", "glacier", "nectar", "prairie", "tundra", "violet",
	"walnut", "yonder", "zephyr", "atlas", "beacon"}

var exts = []string{"txt", "log", "jpg", "png", "mp3", "flac", "md", "go", "pdf", "bin"}

func (f *fixtures) bigPath() string        { return fixDir + "/large/big.bin" }
func (f *fixtures) smallPath(i int) string { return fmt.Sprintf("%s/small/s%05d.bin", fixDir, i) }

// stream returns a deterministic pseudo-random source for one purpose.
func stream(seed uint64, what string) *rand.ChaCha8 {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	copy(s[8:], what)
	return rand.NewChaCha8(s)
}

func makeFixtures(ctx context.Context, c *config, dir string) (*fixtures, error) {
	fx := &fixtures{cfg: c, dir: dir, root: filepath.Join(dir, fixDir), upRoot: filepath.Join(dir, "hb-up"),
		nonce: fmt.Sprintf("%x", time.Now().UnixNano()&0xffffffffff)}
	manifest := fmt.Sprintf("seed=%d big=%d small=%dx%d search=%d\n", c.seed, c.big, c.smallN, c.smallSize, c.searchN)
	mf := filepath.Join(fx.root, "manifest.txt")
	fx.corpus = corpusList(c)
	if b, rerr := os.ReadFile(mf); rerr == nil && string(b) == manifest {
		// made earlier (by -prepare) with the same parameters
	} else {
		if _, err := os.Stat(fx.root); err == nil {
			if rerr != nil || !strings.HasPrefix(string(b), "seed=") {
				return nil, fmt.Errorf("%s exists and was not made by bench; remove it or pick another -dir", fx.root)
			}
			if err := os.RemoveAll(fx.root); err != nil {
				return nil, err
			}
		}
		fx.created = true
		if err := fx.generate(ctx); err != nil {
			os.RemoveAll(fx.root)
			return nil, err
		}
		if err := os.WriteFile(mf, []byte(manifest), 0o644); err != nil {
			return nil, err
		}
	}
	if !c.prepare {
		fx.created = true // removed at the end unless -keep
	}
	var err error
	if fx.big, err = os.Open(filepath.Join(dir, fx.bigPath())); err != nil {
		return nil, err
	}
	return fx, nil
}

func (fx *fixtures) generate(ctx context.Context) error {
	c := fx.cfg
	for _, d := range []string{"large", "small", "srch"} {
		if err := os.MkdirAll(filepath.Join(fx.root, d), 0o755); err != nil {
			return err
		}
	}
	// the big file: random bytes, written in 1 MiB blocks
	f, err := os.Create(filepath.Join(fx.dir, fx.bigPath()))
	if err != nil {
		return err
	}
	rs := stream(c.seed, "big")
	buf := make([]byte, 1<<20)
	for left := c.big; left > 0; {
		if err := ctx.Err(); err != nil {
			f.Close()
			return err
		}
		n := min(left, int64(len(buf)))
		rs.Read(buf[:n])
		if _, err := f.Write(buf[:n]); err != nil {
			f.Close()
			return err
		}
		left -= n
	}
	if err := f.Close(); err != nil {
		return err
	}
	rs = stream(c.seed, "small")
	for i := 0; i < c.smallN; i++ {
		b := make([]byte, c.smallSize)
		rs.Read(b)
		if err := os.WriteFile(filepath.Join(fx.dir, fx.smallPath(i)), b, 0o644); err != nil {
			return err
		}
	}
	// the search corpus: names matter, contents do not (sparse files of the
	// listed size), modification times spread over 2019-2025
	for _, cf := range fx.corpus {
		p := filepath.Join(fx.dir, filepath.FromSlash(cf.rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		// one byte of content at the start keeps equal-sized files apart
		// for servers that deduplicate by content
		fmt.Fprintf(f, "%s\n", cf.rel)
		if err := f.Truncate(cf.size); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		if err := os.Chtimes(p, cf.mt, cf.mt); err != nil {
			return err
		}
	}
	return nil
}

// corpusList is the search corpus for the seed: names of two words and a
// number in folders named by a word, sizes from 100 bytes to 4 MiB.
func corpusList(c *config) []corpusFile {
	r := rand.New(stream(c.seed, "corpus"))
	out := make([]corpusFile, c.searchN)
	t0 := time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	span := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix() - t0
	for i := range out {
		d := words[r.IntN(len(words))]
		name := fmt.Sprintf("%s %s %05d.%s", words[r.IntN(len(words))], words[r.IntN(len(words))], i, exts[r.IntN(len(exts))])
		size := int64(100 + r.IntN(4<<20))
		if r.IntN(4) > 0 {
			size = int64(100 + r.IntN(64<<10))
		}
		out[i] = corpusFile{rel: path.Join(fixDir, "srch", d, name), size: size, mt: time.Unix(t0+r.Int64N(span), 0)}
	}
	return out
}

func (fx *fixtures) remove() {
	if fx.big != nil {
		fx.big.Close()
	}
	if fx.created {
		os.RemoveAll(fx.root)
	}
}

// upDir returns (and creates) a fresh upload folder for one measurement:
// its path below the served root and on disk.
func (fx *fixtures) upDir(t *target, what string, round int) (string, string, error) {
	rel := fmt.Sprintf("hb-up/%s/%s-%s-r%d", t.name, what, fx.nonce, round)
	abs := filepath.Join(fx.dir, filepath.FromSlash(rel))
	// world-writable: nginx's workers run as nobody when it was started by root
	for _, d := range []string{fx.upRoot, filepath.Dir(abs), abs} {
		if err := os.Mkdir(d, 0o777); err != nil && !os.IsExist(err) {
			return "", "", err
		}
		if err := os.Chmod(d, 0o777); err != nil {
			return "", "", err
		}
	}
	return rel, abs, nil
}
