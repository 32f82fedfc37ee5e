package idx

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

var (
	words  = []string{"Alpha", "beta", "Gamma", "delta", "rock", "jazz", "live", "Demo", "mix", "café", "track", "holiday", "report", "draft", "final", "a", "xy", "Ünïcode"}
	exts   = []string{"mp3", "flac", "txt", "log", "jpg", "MP4", "tar.gz", "", "opus"}
	dirs   = []string{"", "music", "music/Rock", "music/jazz live", "docs", "docs/2020", "photos/holiday", "a/b/c/d"}
	people = []string{"Daft Punk", "Nina Simone", "AC/DC", "Mo", "Björk"}
)

// genRecords makes n varied records, deterministically.
func genRecords(n int, seed uint64) []*Record {
	r := rand.New(rand.NewPCG(seed, 1))
	var out []*Record
	seen := map[string]bool{}
	for len(out) < n {
		name := words[r.IntN(len(words))]
		if r.IntN(2) == 0 {
			name += " " + words[r.IntN(len(words))]
		}
		name += "_" + strconv.Itoa(r.IntN(1000))
		if e := exts[r.IntN(len(exts))]; e != "" {
			name += "." + e
		}
		rel := name
		if d := dirs[r.IntN(len(dirs))]; d != "" {
			rel = d + "/" + name
		}
		if seen[rel] {
			continue
		}
		seen[rel] = true
		rec := &Record{
			Rel:   rel,
			Size:  int64(r.ExpFloat64() * float64(int64(1)<<(r.IntN(30)))),
			Mtime: time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(int64(10 * 365 * 24 * time.Hour)))).UnixNano(),
			Wark:  fmt.Sprintf("%044d", len(out)),
		}
		for range r.IntN(3) {
			rec.Chunks = append(rec.Chunks, fmt.Sprintf("c%043d", r.IntN(n)))
		}
		if r.IntN(3) == 0 {
			rec.Tags = map[string]string{
				"artist": people[r.IntN(len(people))],
				"album":  words[r.IntN(len(words))] + " album",
				"title":  words[r.IntN(len(words))],
				"genre":  []string{"Rock", "Jazz", "Electronic"}[r.IntN(3)],
				"year":   strconv.Itoa(1960 + r.IntN(65)),
				"rate":   strconv.Itoa([]int{96, 128, 192, 256, 320, 1411}[r.IntN(6)]),
				"dur":    strconv.FormatFloat(float64(r.IntN(900000))/1000, 'f', -1, 64),
			}
		}
		out = append(out, rec)
	}
	return out
}

var oracleQueries = []string{
	"", "rock", "ROCK", "alpha beta", `"jazz live"`, `"alpha_"`, "café", "ünïcode", "a", "xy", "mu",
	"*.log", "*.LOG", "alpha*", "*a*", "rock*", "music/rock*", "alpha_*.mp3", "docs*", "d*", "ext:tar.gz,gz", "ext:gz,tar.gz,mp3", "*rock*.mp3", "music/*", "*_1?", "*ta_*",
	"-rock", "rock -live", "-mp3 -flac -txt",
	"size:>1M", "size:<1K", "size:=0", "size:>=10M", "size:<=1.5G", "size:>100M ext:flac", "size:1234",
	"date:>2020-01-01", "date:<2016-06-01", "date:=2018-03-04", "date:>=2019-01-01 date:<=2019-12-31", `date:>"2021-06-30 12:34:56"`,
	"path:music", "path:/music/rock", "path:docs/2020", "path:photos/ holiday", "path:a/b/c/d/", "path:nope", "path:music/music", "path:jazz", "path:/music/jazz live", "path:mus/docs", "-path:music/rock", "path:a path:a/b",
	"ext:mp3", "ext:mp3,flac", "ext:tar.gz", "ext:gz", "ext:jpg size:>1K", "-ext:txt",
	"artist:punk", `artist:"nina simone"`, "artist:mo", "album:album", "title:beta", "genre:rock", "genre:jazz artist:björk",
	"year:1999", "year:>=2000", "year:<1970 rate:>=256", "rate:1411", "rate:<128", "dur:>300", "dur:<=60.5", "dur:>100 dur:<200",
	"music ext:mp3 size:>1K date:>2016-01-01 -live", "rock artist:daft year:>1980", "path:music *.flac -jazz", "holiday ext:jpg,mp4",
	"-size:>1K -date:<2020-01-01", "-artist:punk year:>1990",
	// Block postings: many common words, phrases, end-anchored and no-hit
	// wildcards, extension unions with words.
	"alpha beta rock", "rock jazz live demo", "alpha beta gamma delta rock jazz live demo mix track", `"rock_"`, `"beta alpha"`,
	"*.mp3", "*.gz", "*_12.flac", "alpha*.txt", "alpha*beta", "*zzz", "*zzz*", "rock*jazz*live", "*.mp", "*3", "*p3", "*log*",
	"rock ext:mp3,flac,opus", "ext:txt,log alpha", "ext:zzz", "ext:mp3 ext:flac", "café ünïcode", "artist:simone title:beta",
}

// TestOracle runs every query through the planner and through a brute
// force scan of every record with the residual filter, which must agree,
// on a volume mounted at the root and one mounted below it.
// The ids start at 0 and just below a posting block's end, so lists span
// two blocks.
func TestOracle(t *testing.T) {
	for _, first := range []uint64{0, blockIDs - 1500} {
		t.Run(fmt.Sprint(first), func(t *testing.T) { testOracle(t, first) })
	}
}

func testOracle(t *testing.T, first uint64) {
	d := testDB(t, vfs.NewMem())
	defer d.Close()
	d.nextID.Store(first)
	recs := genRecords(4000, 7)
	for _, r := range recs {
		if err := d.PutRecord(r); err != nil {
			t.Fatal(err)
		}
	}
	// Replace and delete some, so stale postings would show.
	for i := 0; i < 200; i++ {
		r := *recs[i]
		r.Size, r.Tags = r.Size+7, nil
		if err := d.PutRecord(&r); err != nil {
			t.Fatal(err)
		}
		recs[i] = &r
	}
	for _, r := range recs[200:300] {
		if err := d.DeleteRecord(r.Rel); err != nil {
			t.Fatal(err)
		}
	}
	recs = slices.Delete(recs, 200, 300)
	if first != 0 {
		// Fold the block postings' merge operands, as a settled index has.
		if err := d.db.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := d.db.Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
			t.Fatal(err)
		}
	}
	plans := map[string]bool{}
	for _, pre := range []string{"", "music/", "mus/"} {
		for _, q := range oracleQueries {
			query, err := Parse(q)
			if err != nil {
				t.Fatalf("Parse(%q): %v", q, err)
			}
			var want []string
			for _, r := range recs {
				full := pre + lower(r.Rel)
				c := &cand{full: full, name: full[bytesLastSlash(full)+1:], pre: len(pre), rec: r}
				ok := true
				for i := range query.Terms {
					ok = ok && query.Terms[i].match(c)
				}
				if ok {
					want = append(want, r.Rel)
				}
			}
			p, err := makePlan(d.db, d.db, pre, query.Terms)
			if err != nil {
				t.Fatal(err)
			}
			plans[p.Name()] = true
			var got []string
			if err := p.run(context.Background(), d.db, pre, query.Terms, func(c *cand) bool {
				got = append(got, c.rec.Rel)
				return true
			}); err != nil {
				t.Fatal(err)
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("pre %q query %q plan %s: %d hits, brute force %d", pre, q, p.Name(), len(got), len(want))
			}
		}
	}
	for _, name := range []string{"tri", "glob", "ext", "size", "date", "path", "num", "scan", "none"} {
		if !plans[name] {
			t.Errorf("no query used the %q plan", name)
		}
	}
}

// TestPlanChoice names the plan of typical queries on the generated set.
func TestPlanChoice(t *testing.T) {
	d := testDB(t, vfs.NewMem())
	defer d.Close()
	for _, r := range genRecords(3000, 3) {
		if err := d.PutRecord(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ q, plan string }{
		{"holiday", "tri"},
		{"*.log", "tri"},
		{"*a*", "scan"},
		{"size:>1G", "size"},
		{"date:>=2024-09-01", "date"},
		{"path:a/b/c", "path"},
		{"ext:opus", "ext"},
		{"year:1977", "num"},
		{"path:nowhere", "none"},
		{"zzzqqq", "none"},
		{"-rock", "scan"},
	} {
		q, err := Parse(c.q)
		if err != nil {
			t.Fatal(err)
		}
		p, err := makePlan(d.db, d.db, "", q.Terms)
		if err != nil {
			t.Fatal(err)
		}
		if p.Name() != c.plan {
			t.Errorf("plan(%q) = %s, want %s", c.q, p.Name(), c.plan)
		}
	}
}
