package store

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestConfineWrites: an upload through a view lands in the shared folder,
// published as any other (collision names, replace), and its event and
// lifetime are the volume's, with the volume's path; through a link out of
// the folder nothing is written, and no work file is left anywhere.
func TestConfineWrites(t *testing.T) {
	st, dirs := openStore(t, "::rwd:c,lifetime=3600")
	v, top := st.Volumes()[0], dirs[0]
	for _, p := range []string{"proj/sub", "other"} {
		if err := os.MkdirAll(filepath.Join(top, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../other", filepath.Join(top, "proj", "out")); err != nil {
		t.Fatal(err)
	}
	var events []Event
	st.Subscribe(func(e Event) { events = append(events, e) })
	c, release, err := v.Confine("proj")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if o, base := c.Outer(); o != v || base != "proj" {
		t.Fatalf("Outer() = %p %q, want the volume and proj", o, base)
	}
	res, err := c.Ingest(context.Background(), "sub/new", strings.NewReader("hello"), IngestOptions{Name: "a.txt", Size: 5, Life: time.Hour, ClientIP: "1.2.3.4"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rel != "sub/new/a.txt" {
		t.Errorf("Rel = %q, want the view's path", res.Rel)
	}
	if b, _ := os.ReadFile(filepath.Join(top, "proj", "sub", "new", "a.txt")); string(b) != "hello" {
		t.Fatalf("file holds %q", b)
	}
	if len(events) != 1 || events[0].Vol != v || events[0].Rel != "proj/sub/new/a.txt" {
		t.Fatalf("events %+v, want one on the volume at proj/sub/new/a.txt", events)
	}
	if recs, _ := os.ReadDir(filepath.Join(v.HistPath(), "expire")); len(recs) != 1 {
		t.Fatalf("%d expiry records in the volume's state folder, want 1", len(recs))
	}
	// A second upload of the name gets a collision name; replace replaces.
	res2, err := c.Ingest(context.Background(), "sub/new", strings.NewReader("again"), IngestOptions{Name: "a.txt", Size: 5})
	if err != nil || res2.Rel == res.Rel {
		t.Fatalf("collision: %+v %v", res2, err)
	}
	if _, err := c.Ingest(context.Background(), "sub/new", strings.NewReader("third"), IngestOptions{Name: "a.txt", Size: 5, Replace: true}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(top, "proj", "sub", "new", "a.txt")); string(b) != "third" {
		t.Fatalf("replaced file holds %q", b)
	}
	// Through the link out of the folder: refused, nothing anywhere.
	for _, dir := range []string{"out", "out/deeper"} {
		if _, err := c.Ingest(context.Background(), dir, strings.NewReader("x"), IngestOptions{Name: "planted", Size: 1}); !errors.Is(err, ErrOutside) {
			t.Errorf("Ingest into %s: %v, want ErrOutside", dir, err)
		}
	}
	if _, err := c.Ingest(context.Background(), "out", strings.NewReader("x"), IngestOptions{Name: "planted", Size: 1, Append: true}); err == nil {
		t.Error("append through the link succeeded")
	}
	if got := tree(t, filepath.Join(top, "other")); len(got) != 0 {
		t.Errorf("the folder outside holds %v", got)
	}
	for _, p := range tree(t, top) {
		if strings.HasSuffix(p, PartialSuffix) {
			t.Errorf("work file left: %s", p)
		}
	}
	if f, _, err := c.Open("out/x"); err == nil {
		f.Close()
		t.Error("Open through the link")
	}
	// File keys are the file's own, by its path in the volume.
	f := v.Flags()
	f.FK = 8
	v.setFlags(f)
	c.setFlags(f)
	fi, _ := c.Stat("sub/new/a.txt")
	if c.FileKey("sub/new/a.txt", fi) != v.FileKey("proj/sub/new/a.txt", fi) {
		t.Error("a view's file key differs from the volume's")
	}
}

// TestConfineFiles: a view of some files of a folder reaches those files
// only, never through a symbolic link (not even one to a file beside
// them), lists only them, and takes no uploads.
func TestConfineFiles(t *testing.T) {
	st, dirs := openStore(t, "::rwd")
	v, top := st.Volumes()[0], dirs[0]
	for name, body := range map[string]string{"d/a.txt": "A", "d/secret.txt": "S", "d/sub/x": "X"} {
		p := filepath.Join(top, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	os.Symlink("secret.txt", filepath.Join(top, "d", "l.txt"))
	c, release, err := v.ConfineFiles("d", []string{"a.txt", "l.txt"})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	f, _, err := c.Open("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "A" {
		t.Fatalf("a.txt: %q", b)
	}
	for _, rel := range []string{"l.txt", "secret.txt", "sub/x", "sub", "."} {
		if f, _, err := c.Open(rel); err == nil {
			f.Close()
			t.Errorf("Open(%q) opened", rel)
		}
	}
	for _, rel := range []string{"l.txt", "secret.txt", "sub"} {
		if _, err := c.Stat(rel); err == nil {
			t.Errorf("Stat(%q) = nil error", rel)
		}
	}
	ents, err := c.List(context.Background(), "", ListOptions{Dots: true})
	if err != nil || len(ents) != 1 || ents[0].Name != "a.txt" {
		t.Fatalf("List = %+v %v, want a.txt only", ents, err)
	}
	if _, err := c.Ingest(context.Background(), "", strings.NewReader("x"), IngestOptions{Name: "a.txt", Size: 1, Replace: true}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Ingest: %v, want ErrReadOnly", err)
	}
	if _, _, err := c.Confine(""); err == nil {
		t.Error("a view of files confined again to a view of its folder")
	}
	if _, err := c.OpenDir(""); err == nil {
		t.Error("OpenDir on a view of files")
	}
}

// TestShareReachAndAdmins: admin is per volume. A share's creator manages
// it; others only as admins of every volume it reaches: the one it lies
// in, and any whose folder lies inside the shared folder on disk.
func TestShareReachAndAdmins(t *testing.T) {
	top := t.TempDir()
	inner := filepath.Join(top, "docs", "inner")
	os.MkdirAll(inner, 0o755)
	other := t.TempDir()
	var cfg Config
	for _, spec := range []string{top + "::rw,alice:A,boss:A,root", other + ":adm:A,mal:A,boss:A,root", inner + ":inner:A,carol:A,root"} {
		vs, err := ParseVolume(spec)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Volumes = append(cfg.Volumes, vs)
	}
	for _, u := range []string{"alice", "boss", "root", "mal", "carol"} {
		cfg.Accounts = append(cfg.Accounts, Account{User: u, Pass: u + "-pw"})
	}
	st, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	docs := Share{Key: "d", VPath: "docs", Perms: "rw", Creator: "alice"}
	pub := Share{Key: "p", VPath: "pub", Perms: "r", Creator: "alice"}
	files := Share{Key: "f", VPath: "docs", Files: []string{"x"}, Perms: "rw", Creator: "alice"}
	reach := func(sh Share) []string {
		var out []string
		for _, v := range st.ShareReach(sh) {
			out = append(out, "/"+v.VPath)
		}
		slices.Sort(out)
		return out
	}
	if got := reach(docs); !slices.Equal(got, []string{"/", "/inner"}) {
		t.Errorf("docs reaches %v", got)
	}
	if got := reach(pub); !slices.Equal(got, []string{"/"}) {
		t.Errorf("pub reaches %v", got)
	}
	for _, c := range []struct {
		user string
		sh   Share
		want bool
	}{
		{"alice", docs, true}, {"", docs, false}, {"mal", docs, false}, {"mal", pub, false}, {"carol", docs, false},
		{"boss", pub, true}, {"boss", docs, false}, {"root", docs, true},
	} {
		if got := st.MayManageShare(c.user, c.sh); got != c.want {
			t.Errorf("MayManageShare(%q, %s) = %v, want %v", c.user, c.sh.Key, got, c.want)
		}
	}
	if _, _, p := st.ShareAccess(files); p != PermRead {
		t.Errorf("a share of files grants %v, want read only", p)
	}
	if _, _, p := st.ShareAccess(docs); p != PermRead|PermWrite {
		t.Errorf("docs grants %v, want rw", p)
	}
}

// TestShadowed: a path is another volume's when one is mounted at or above
// it; a view sees it by the volume's URL.
func TestShadowed(t *testing.T) {
	st, dirs := openStore(t, "::r", ":a/b:r")
	root := st.Volumes()[1]
	os.MkdirAll(filepath.Join(dirs[0], "a", "b"), 0o755)
	for rel, want := range map[string]bool{"": false, "a": false, "a/b": true, "a/b/c": true, "a/bc": false, "x/a/b": false} {
		if got := st.Shadowed(root, rel); got != want {
			t.Errorf("Shadowed(root, %q) = %v, want %v", rel, got, want)
		}
	}
	c, release, err := root.Confine("a")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if !st.Shadowed(c, "b") || st.Shadowed(c, "") || st.Shadowed(c, "c") {
		t.Error("a view of a: b is shadowed, nothing else")
	}
}

// tree lists the paths below dir.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}
