package http

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"hoard/idx"
	"hoard/store"
)

// TestRecentRingFollowsManage: ?ups and ?ru list a moved upload at its new
// path and forget a deleted one (a file, or a folder with it inside).
func TestRecentRingFollowsManage(t *testing.T) {
	dir, dir2 := t.TempDir(), t.TempDir()
	st, err := store.Open(store.Config{Volumes: []store.VolumeSpec{
		{Src: dir, Perms: map[string]store.Perm{"*": store.PermAll}},
		{Src: dir2, VPath: "two", Perms: map[string]store.Perm{"*": store.PermAll}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var top, two *store.Volume
	for _, v := range st.Volumes() {
		if v.VPath == "" {
			top = v
		} else {
			two = v
		}
	}
	r := idx.NewRecentRing(st, 16)
	ctx := context.Background()
	for _, p := range []struct{ dir, name string }{{"a", "one"}, {"a/b", "two"}, {"", "three"}, {"c", "four"}} {
		if _, err := top.Ingest(ctx, p.dir, bytes.NewReader([]byte("x")), store.IngestOptions{Name: p.name, Size: 1, Uploader: "ann", ClientIP: "10.0.0.1"}); err != nil {
			t.Fatal(err)
		}
	}
	who := store.Actor{IP: "10.0.0.9"}
	if _, err := st.Move(ctx, who, store.Loc{Vol: top, Rel: "a"}, store.Loc{Vol: two, Rel: "z"}, store.DestOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Move(ctx, who, store.Loc{Vol: top, Rel: "three"}, store.Loc{Vol: top, Rel: "3"}, store.DestOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Delete(ctx, who, store.Loc{Vol: top, Rel: "c"}, store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range r.Recent(10, func(*idx.Upload) bool { return true }) {
		got = append(got, uploadPath(u.Vol, u.Rel))
	}
	if s := fmt.Sprint(got); s != "[/3 /two/z/b/two /two/z/one]" {
		t.Fatalf("recent uploads: %s", s)
	}
}
