package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A folder held open from an upload's start to its publish (a PUT's, an
// up2k handshake's or chunk post's) may be moved meanwhile: out of the
// volume, into the state folder, or elsewhere inside the volume (where
// the file would appear under a path nothing records). The publish is
// then refused, and nothing appears in the moved folder.
func TestHeldFolderMovedAway(t *testing.T) {
	outside := t.TempDir()
	for _, how := range []string{"put", "put-anon", "up2k", "up2k-handshake", "up2k-anon", "up2k-held"} {
		for _, to := range []string{"outside", "state", "inside"} {
			t.Run(how+"-"+to, func(t *testing.T) {
				st, dirs := openStore(t, "::A")
				v, vol := st.Volumes()[0], dirs[0]
				sub := how + "-" + to
				var tmp *Temp
				var err error
				switch how {
				case "put":
					tmp, err = v.createTemp(sub, true, false)
				case "put-anon":
					tmp, err = v.createTemp(sub, true, true) // as Ingest holds it
					if err == nil && !tmp.anon && !noTmpfile.Load() {
						t.Error("Ingest's work file is a named one")
					}
				case "up2k-held":
					// A small up2k file's handshake holds the folder
					// (no work file), its chunk post makes an unnamed
					// file there.
					var name string
					name, tmp, err = v.FreeName(sub, "f.bin", "", func(string) bool { return true }, true)
					if err == nil && (name != "f.bin" || tmp == nil) {
						t.Fatalf("FreeName: %q %v", name, tmp)
					}
					if err == nil {
						var ok bool
						if ok, err = tmp.OpenAnon(); err == nil && !ok {
							t.Skip("no unnamed files here")
						}
					}
				case "up2k-anon":
					// A small up2k file's chunk post (its handshake
					// made the folder and no work file).
					os.MkdirAll(filepath.Join(vol, sub), 0o755)
					var ok bool
					tmp, ok, err = v.CreateAnon(sub)
					if err == nil && !ok {
						t.Skip("no unnamed files here")
					}
				case "up2k-handshake":
					// The handshake's own work file, written and
					// published through the folder it holds.
					os.MkdirAll(filepath.Join(vol, sub), 0o755)
					n := fastOpens.Load()
					tmp, _, err = v.CreatePartial(sub, "f.bin", 5, PartialOptions{})
					if err == nil && v.dir != nil && !noOpenat2.Load() && fastOpens.Load() == n {
						t.Error("CreatePartial into a plain folder did not take the fast open")
					}
				default:
					var c *Temp
					c, _, err = v.CreatePartial(sub, "f.bin", 5, PartialOptions{})
					if err == nil {
						c.Close()
						tmp, err = v.OpenPartial(sub, "f.bin")
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				if tmp.dirf == nil {
					t.Fatal("the folder is not held")
				}
				if _, err := tmp.File.WriteAt([]byte("hello"), 0); err != nil {
					t.Fatal(err)
				}
				dst := filepath.Join(outside, sub)
				switch to {
				case "state":
					dst = filepath.Join(vol, HistName, sub)
				case "inside":
					// Elsewhere in the volume: the file would
					// appear under a path nothing records.
					dst = filepath.Join(vol, "elsewhere", sub)
					os.MkdirAll(filepath.Dir(dst), 0o755)
				}
				if err := os.Rename(filepath.Join(vol, sub), dst); err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(how, "put") {
					_, _, err = tmp.Publish("f.bin", PublishOptions{})
				} else {
					_, _, err = tmp.PublishLinked("f.bin", PublishOptions{})
				}
				tmp.Close()
				if err == nil {
					t.Error("published into a folder moved away")
				}
				if _, err := os.Lstat(filepath.Join(dst, "f.bin")); err == nil {
					t.Errorf("f.bin appeared in the moved folder (%s)", to)
				}
			})
		}
	}
}

// TestRecheck: a work file kept open since its handshake is still usable
// only while its name in its folder is that same regular file and the
// folder is where it was.
func TestRecheck(t *testing.T) {
	for _, what := range []string{"kept", "removed", "symlink", "other file", "folder moved"} {
		t.Run(what, func(t *testing.T) {
			st, dirs := openStore(t, "::A")
			v, vol := st.Volumes()[0], dirs[0]
			mkfiles(t, vol, map[string]string{"up/other.bin": "other"})
			tmp, _, err := v.CreatePartial("up", "f.bin", 5, PartialOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer tmp.Close()
			work := filepath.Join(vol, "up", "f.bin"+PartialSuffix)
			switch what {
			case "removed":
				os.Remove(work)
			case "symlink":
				os.Remove(work)
				os.Symlink("other.bin", work)
			case "other file":
				os.Remove(work)
				os.WriteFile(work, []byte("12345"), 0o644)
			case "folder moved":
				os.Rename(filepath.Join(vol, "up"), filepath.Join(vol, "moved"))
			}
			err = tmp.Recheck()
			if what == "kept" && err != nil {
				t.Fatalf("a kept work file failed its recheck: %v", err)
			}
			if what != "kept" && err == nil {
				t.Fatalf("%s: the recheck passed", what)
			}
		})
	}
}
