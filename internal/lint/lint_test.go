// Package lint keeps the rooms of docs/design.md apart: each top-level
// package may import only what the design allows, and a few house rules
// hold across the tree.
package lint

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "hoard"

// rule says what one package may import: other hoard packages by name,
// third-party module prefixes, and standard-library packages it must avoid.
type rule struct {
	hoard     []string // allowed hoard packages (relative, e.g. "store")
	thirdPty  []string // allowed non-stdlib import prefixes
	forbidStd []string // stdlib packages (or prefixes ending in "/") it must not import
}

var xlibs = []string{"golang.org/x/sys/", "golang.org/x/crypto/", "golang.org/x/text/", "golang.org/x/image/"}

var rules = map[string]rule{
	// goldmark: CommonMark rendering for ?v, safe by default (raw HTML and dangerous URLs dropped).
	// http: no x/sys, no syscall, no archive readers (arch reads zips).
	"http":  {hoard: []string{"store", "up2k", "idx", "arch", "media"}, thirdPty: []string{"github.com/yuin/goldmark", "golang.org/x/text/"}, forbidStd: []string{"crypto/sha512", "crypto/sha256", "crypto/sha1", "crypto/md5", "hash/", "syscall", "archive/", "io/ioutil", "path/filepath"}},
	"store": {thirdPty: xlibs, forbidStd: []string{"net/http"}},
	"up2k":  {hoard: []string{"store"}, thirdPty: xlibs, forbidStd: []string{"net/http"}},
	// up2k/client is the protocol's client half (hoard up): it speaks HTTP,
	// so unlike up2k proper it may import net/http; it shares up2k's chunk
	// math and lanes, and store's pure name helpers.
	"up2k/client": {hoard: []string{"up2k", "store"}, thirdPty: xlibs},
	"idx":         {hoard: []string{"store"}, thirdPty: append([]string{"github.com/cockroachdb/pebble", "github.com/cespare/xxhash"}, xlibs...), forbidStd: []string{"net/http"}},
	"arch":        {hoard: []string{"store", "media"}, thirdPty: append([]string{"github.com/klauspost/compress/", "github.com/ulikunitz/xz", "github.com/dsnet/compress/"}, xlibs...), forbidStd: []string{"net/http"}},
	"media":       {hoard: []string{"store"}, thirdPty: xlibs, forbidStd: []string{"net/http"}},
	"bench":       {hoard: []string{"up2k"}, thirdPty: xlibs},
	// bench/s3bench: the direct S3 client hoard on S3 is measured against
	// (issue 21) is minio-go itself, the library hoard's s3 room uses.
	"bench/s3bench": {thirdPty: []string{"github.com/minio/minio-go/v7"}},
	// s3: store.ObjectStore over minio-go (issue 21, docs/s3.md); store itself speaks no S3.
	"s3": {hoard: []string{"store"}, thirdPty: append([]string{"github.com/minio/minio-go/v7"}, xlibs...), forbidStd: []string{"net/http"}},
}

func moduleRoot(t *testing.T) string {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// packages returns every folder of the module holding non-test Go files.
func packages(t *testing.T) map[string]*build.Package {
	root := moduleRoot(t)
	out := map[string]*build.Package{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "testdata") {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(p, 0)
		if err != nil {
			return nil // no Go files
		}
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = pkg
		return nil
	})
	return out
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func TestImportBoundaries(t *testing.T) {
	pkgs := packages(t)
	if len(pkgs) < 3 {
		t.Fatalf("found only %d packages; is the module root right?", len(pkgs))
	}
	for dir, pkg := range pkgs {
		room, _, _ := strings.Cut(dir, "/")
		r, ok := rules[dir] // a sub-package with a rule of its own
		if !ok {
			r, ok = rules[room]
		}
		if !ok {
			continue // main.go and internal/ may import anything
		}
		for _, imp := range pkg.Imports {
			switch {
			case imp == module || strings.HasPrefix(imp, module+"/"):
				other, _, _ := strings.Cut(strings.TrimPrefix(imp, module+"/"), "/")
				if other != room && !slices.Contains(r.hoard, other) {
					t.Errorf("%s imports %s; docs/design.md does not allow %s → %s", dir, imp, room, other)
				}
			case isStd(imp):
				for _, f := range r.forbidStd {
					if imp == f || (strings.HasSuffix(f, "/") && strings.HasPrefix(imp, f)) {
						t.Errorf("%s imports %s, which its room must not use", dir, imp)
					}
				}
			default:
				if !slices.ContainsFunc(r.thirdPty, func(p string) bool { return strings.HasPrefix(imp, p) || imp == strings.TrimSuffix(p, "/") }) {
					t.Errorf("%s imports %s; add it to its room's rule only with a reason", dir, imp)
				}
			}
		}
	}
}

// goFiles parses every non-test Go file of the module.
func goFiles(t *testing.T) map[string]*ast.File {
	root := moduleRoot(t)
	out := map[string]*ast.File{}
	fset := token.NewFileSet()
	for dir, pkg := range packages(t) {
		for _, name := range pkg.GoFiles {
			p := filepath.Join(root, dir, name)
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			out[filepath.ToSlash(filepath.Join(dir, name))] = f
		}
	}
	return out
}

// calls reports every pkg.Func selector call in f whose package is imported
// under its own name.
func calls(f *ast.File, pkg string, funcs ...string) []string {
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == pkg && (len(funcs) == 0 || slices.Contains(funcs, sel.Sel.Name)) {
			out = append(out, pkg+"."+sel.Sel.Name)
		}
		return true
	})
	return out
}

// TestHandlersDoNotTouchFiles: the http room gets files from store only.
func TestHandlersDoNotTouchFiles(t *testing.T) {
	for name, f := range goFiles(t) {
		if !strings.HasPrefix(name, "http/") {
			continue
		}
		if c := calls(f, "os", "Open", "OpenFile", "Create", "ReadFile", "WriteFile", "Remove", "RemoveAll", "Rename", "Mkdir", "MkdirAll", "OpenRoot", "OpenInRoot", "Stat", "Lstat", "ReadDir"); len(c) > 0 {
			t.Errorf("%s calls %v; handlers go through store", name, c)
		}
	}
}

// TestLogOnlyInMain: packages log through *slog.Logger, not the log package.
func TestLogOnlyInMain(t *testing.T) {
	for name, f := range goFiles(t) {
		if name == "main.go" {
			continue
		}
		if c := calls(f, "log", "Print", "Printf", "Println", "Fatal", "Fatalf", "Fatalln", "Panic", "Panicf"); len(c) > 0 {
			t.Errorf("%s calls %v; use the *slog.Logger from its Config", name, c)
		}
	}
}

// TestRawAtomics: use atomic.Int64 and friends, never the raw functions.
func TestRawAtomics(t *testing.T) {
	for name, f := range goFiles(t) {
		for _, c := range calls(f, "atomic") {
			fn := strings.TrimPrefix(c, "atomic.")
			for _, p := range []string{"Add", "Load", "Store", "Swap", "CompareAndSwap", "And", "Or"} {
				if strings.HasPrefix(fn, p) {
					t.Errorf("%s calls %s; use a typed atomic (atomic.Int64, atomic.Bool, ...)", name, c)
				}
			}
		}
	}
}

// TestHTTPNoFileAccess: the http room touches no file system of its own.
// It may hold an *os.File store handed it (to send or read), nothing
// else of package os: no os.Open*, Stat, ReadDir, Root, Remove..., and no
// inotify or x/sys (an import of those fails TestImportBoundaries).
func TestHTTPNoFileAccess(t *testing.T) {
	for name, f := range goFiles(t) {
		if !strings.HasPrefix(name, "http/") {
			continue
		}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if p == "os" && imp.Name != nil {
				t.Errorf("%s imports os as %s; the lint needs the plain name", name, imp.Name.Name)
			}
			if strings.Contains(p, "inotify") || strings.Contains(p, "fsnotify") || strings.HasPrefix(p, "golang.org/x/sys") || p == "syscall" {
				t.Errorf("%s imports %s; file watching lives in store", name, p)
			}
		}
		for _, c := range calls(f, "os") {
			if c != "os.File" {
				t.Errorf("%s uses %s; http gets files and facts about them from store", name, c)
			}
		}
	}
}

// TestNoConflictMarkers: no file of the checkout keeps a merge's conflict
// markers. gofmt catches them in Go files only; a README once shipped with
// both sides of a conflict.
func TestNoConflictMarkers(t *testing.T) {
	root := moduleRoot(t)
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (n == ".git" || n == ".hist" || n == "testdata" || n == "out" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if fi, err := d.Info(); err != nil || fi.Size() > 4<<20 {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || slices.Contains(b, 0) {
			return nil // unreadable or binary
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "<<<<<<< ") || strings.HasPrefix(line, ">>>>>>> ") || line == "<<<<<<<" || line == ">>>>>>>" {
				rel, _ := filepath.Rel(root, p)
				t.Errorf("%s:%d: a merge conflict marker: %q", filepath.ToSlash(rel), i+1, line)
			}
		}
		return nil
	})
}
