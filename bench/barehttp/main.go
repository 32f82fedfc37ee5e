// Command barehttp is the ceiling of Go's net/http on this machine: the
// least a Go file server could do per request. Files up to 64 KiB are
// read once and then written from memory (the "bare net/http handler
// writing 4 KiB from memory" that issue 19 measures get-small against);
// larger files go through http.ServeContent on an open file, so a range
// request is the standard library's own path (sendfile from the file).
// A PUT writes its body to a new file in an existing folder and answers
// 201, without fsync (as nginx's dav module does): the ceiling of a Go
// upload handler, which put-small and put-large are measured against. A
// POST speaks up2k the least a server can while storing the bytes (up2k.go:
// no hashing, no records, no sync), the ceiling of up2k-many.
// Everything else (listings) is refused with 405, which the benchmark reads
// as "this target does not offer that".
//
//	go run ./bench/barehttp -p 3923 -dir DATA
//
// It binds 127.0.0.1 only. bench/compare.sh runs it as the peer "gobare"
// (PEERS="nginx copyparty gobare").
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
)

const memMax = 64 << 10

func main() {
	port := flag.Int("p", 3923, "port on 127.0.0.1")
	dir := flag.String("dir", ".", "folder to serve")
	flag.Parse()
	root, err := os.OpenRoot(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "barehttp:", err)
		os.Exit(2)
	}
	var mem sync.Map // name → []byte, files up to memMax
	u2 := &up2k{root: root, sess: map[string]*u2sess{}, warks: map[string]string{}}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPut:
			put(root, w, r)
			return
		case http.MethodPost:
			u2.serve(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "read only", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, "/")
		if name == "" {
			name = "."
		}
		if b, ok := mem.Load(name); ok && r.Header.Get("Range") == "" {
			body := b.([]byte)
			h := w.Header()
			h["Content-Type"] = []string{"application/octet-stream"}
			h["Content-Length"] = []string{strconv.Itoa(len(body))}
			if r.Method == http.MethodGet {
				w.Write(body)
			}
			return
		}
		f, err := root.Open(name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil || fi.IsDir() {
			http.NotFound(w, r)
			return
		}
		if fi.Size() <= memMax {
			b := make([]byte, fi.Size())
			if _, err := f.ReadAt(b, 0); err == nil {
				mem.Store(name, b)
			}
		}
		http.ServeContent(w, r, name, fi.ModTime(), f)
	})
	fmt.Printf("listening on http://127.0.0.1:%d\n", *port)
	if err := http.ListenAndServe(fmt.Sprintf("127.0.0.1:%d", *port), nil); err != nil {
		fmt.Fprintln(os.Stderr, "barehttp:", err)
		os.Exit(1)
	}
}

// put writes r's body to the file its path names (the folder must exist)
// and answers 201; nothing is fsynced.
func put(root *os.Root, w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/")
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	_, err = io.Copy(f, r.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusCreated)
}
