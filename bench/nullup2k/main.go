// Command nullup2k answers copyparty's up2k protocol without doing any
// of the work: it neither hashes nor stores, and it never syncs. Running
// u2c.py against it gives the client's floor on this machine, the time
// no server could beat (bench/u2c.sh runs it as the third server).
//
//	go run ./bench/nullup2k -p 3923
//
// A handshake asks for every chunk the first time it sees a file (by
// path and size) and for none afterwards; a chunk post is read to the
// end and thanked. It binds 127.0.0.1 only.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"slices"
	"strconv"
	"sync"
)

type handshake struct {
	Name string   `json:"name"`
	Size int64    `json:"size"`
	Hash []string `json:"hash"`
}

func main() {
	port := flag.Int("p", 3923, "port on 127.0.0.1")
	flag.Parse()
	var mu sync.Mutex
	seen := map[string]bool{}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.Header.Get("X-Up2k-Wark") == "":
			var h handshake
			if err := json.NewDecoder(r.Body).Decode(&h); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			key := path.Join(r.URL.Path, h.Name) + "\x00" + strconv.FormatInt(h.Size, 10)
			mu.Lock()
			need := []string{} // each hash once, as servers answer
			if !seen[key] {
				for _, x := range h.Hash {
					if !slices.Contains(need, x) {
						need = append(need, x)
					}
				}
			}
			seen[key] = true
			mu.Unlock()
			var id [22]byte // 44 hex characters: a wark's length and alphabet
			rand.Read(id[:])
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{
				"name": h.Name, "purl": r.URL.Path, "size": h.Size,
				"lmod": 0, "hash": need, "wark": hex.EncodeToString(id[:]), "sprs": true,
			})
		case r.Method == http.MethodPost:
			io.Copy(io.Discard, r.Body)
			io.WriteString(w, "thank")
		default:
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<!DOCTYPE html><title>null</title>")
		}
	})
	if err := http.ListenAndServe("127.0.0.1:"+strconv.Itoa(*port), nil); err != nil {
		fmt.Fprintln(os.Stderr, "nullup2k:", err)
		os.Exit(1)
	}
}
