package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"hoard/store"
	"hoard/up2k"
)

// TestPutCarriesUp2kIdentity: an upload hashed whole with sha512 (a PUT's
// default) of a file of one up2k chunk announces its wark and chunk hash
// on its Created event, exactly as the index would compute them by
// reading the file again (so the index does not); a file of two chunks,
// another checksum and a compressed upload announce none (the index
// hashes those as before).
func TestPutCarriesUp2kIdentity(t *testing.T) {
	dir := t.TempDir()
	fs, o := newFlags()
	if err := fs.Parse([]string{"-v", dir + "::rw", "--warksalt", "pepper"}); err != nil {
		t.Fatal(err)
	}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	cfg, err := o.storeConfig(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var mu sync.Mutex
	got := map[string]store.Event{}
	st.Subscribe(func(e store.Event) {
		if e.Kind == store.Created {
			mu.Lock()
			got[e.Rel] = e
			mu.Unlock()
		}
	})
	v := st.Volumes()[0]
	one := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // exactly 1 MiB: one chunk
	cases := []struct {
		name, ck string
		body     []byte
		identity bool
	}{
		{"small.bin", "", []byte("hello, hoard"), true},
		{"chunk.bin", "sha512", one, true},
		{"two.bin", "sha512", append(slices.Clone(one), 'x'), false},
		{"md5.bin", "md5", []byte("hello"), false},
		{"none.bin", "no", []byte("hello"), false},
		{"empty.bin", "", nil, false},
	}
	for _, c := range cases {
		if _, err := v.Ingest(context.Background(), "", bytes.NewReader(c.body), store.IngestOptions{Name: c.name, Checksum: c.ck, Size: int64(len(c.body))}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, c := range cases {
		e, ok := got[c.name]
		if !ok {
			t.Fatalf("%s: no Created event", c.name)
		}
		if !c.identity {
			if e.Wark != "" || e.Chunks != nil {
				t.Errorf("%s: event carries wark %q chunks %q, want none", c.name, e.Wark, e.Chunks)
			}
			continue
		}
		f, err := os.Open(filepath.Join(dir, c.name))
		if err != nil {
			t.Fatal(err)
		}
		wark, chunks, err := up2k.HashFile(context.Background(), f, int64(len(c.body)), "pepper", 0, "", c.name)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if e.Wark != wark || !slices.Equal(e.Chunks, chunks) {
			t.Errorf("%s: event wark %q chunks %q, want %q %q (the index's)", c.name, e.Wark, e.Chunks, wark, chunks)
		}
		if e.Size != int64(len(c.body)) {
			t.Errorf("%s: event size %d", c.name, e.Size)
		}
	}
}
