package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"hoard/up2k"
)

// u2file is one file to upload with up2k: its chunk hashes are known before
// the timed part starts.
type u2file struct {
	name   string
	size   int64
	lmod   int64
	hashes []string
	body   func(ofs, n int64) io.Reader
}

type u2reply struct {
	Purl string    `json:"purl"`
	Wark string    `json:"wark"`
	Name string    `json:"name"`
	Hash *[]string `json:"hash"`
	Need *[]string `json:"need"`
}

// stitchMax is how many bytes u2c puts into one chunk POST (its --sz
// default, 64 MiB): consecutive needed chunks are joined up to that.
const stitchMax = 64 << 20

// handshake posts the file's hash list to the folder and returns the
// server's answer; needed is the list of chunks still to send.
func (e *env) handshake(ctx context.Context, folder string, f *u2file) (*u2reply, []string, error) {
	body, _ := json.Marshal(map[string]any{"name": f.name, "size": f.size, "lmod": f.lmod, "hash": f.hashes})
	req, err := http.NewRequestWithContext(ctx, "POST", folder, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.t.client().Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != 200 {
		if resp.StatusCode == 405 || resp.StatusCode == 501 || (resp.StatusCode/100 == 4 && bytes.Contains(b, []byte("<html"))) {
			return nil, nil, unsupportedf("up2k handshake answered %s", resp.Status)
		}
		return nil, nil, fmt.Errorf("up2k handshake %s: %s: %s", f.name, resp.Status, clipBytes(b))
	}
	var r u2reply
	if err := json.Unmarshal(b, &r); err != nil || r.Wark == "" {
		return nil, nil, unsupportedf("up2k handshake answered 200 without a wark (%.80q)", b)
	}
	var need []string
	switch {
	case r.Hash != nil:
		need = *r.Hash
	case r.Need != nil:
		need = *r.Need
	}
	return &r, need, nil
}

// u2upload uploads f into the folder URL the way copyparty's u2c does:
// handshake, the needed chunks in file order joined into POSTs of up to
// 64 MiB of consecutive chunks, sent over j connections, then a final
// handshake that must find nothing missing.
func (e *env) u2upload(ctx context.Context, folder string, f *u2file, j int, moved *atomic.Int64) error {
	r, need, err := e.handshake(ctx, folder, f)
	if err != nil {
		return err
	}
	if len(need) == 0 && f.size > 0 {
		return fmt.Errorf("up2k %s: the server needs no chunks (content not fresh?)", f.name)
	}
	cs := up2k.ChunkSize(f.size)
	idx := make(map[string]int, len(f.hashes))
	for i, h := range f.hashes {
		idx[h] = i
	}
	var order []int
	for _, h := range need {
		i, ok := idx[h]
		if !ok {
			return fmt.Errorf("up2k %s: the server asks for chunk %q that the file does not have", f.name, h)
		}
		order = append(order, i)
	}
	slices.Sort(order)
	njoin := max(1, int(stitchMax/cs))
	var slicesQ [][]int
	for k := 0; k < len(order); {
		n := 1
		for n < njoin && k+n < len(order) && order[k+n] == order[k]+n {
			n++
		}
		slicesQ = append(slicesQ, order[k:k+n])
		k += n
	}
	post := e.t.url + r.Purl
	if strings.HasPrefix(r.Purl, "http://") {
		post = r.Purl
	} else if r.Purl == "" {
		post = folder
	}
	q := make(chan []int)
	errc := make(chan error, j)
	var wg sync.WaitGroup
	for range min(j, len(slicesQ)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sl := range q {
				ofs := int64(sl[0]) * cs
				end := min(f.size, int64(sl[len(sl)-1]+1)*cs)
				hdr := f.hashes[sl[0]]
				if len(sl) > 1 { // u2c's compact form: first hash, prefix length, prefixes of the rest
					n := min(9, max(2, 192/len(sl)))
					var b strings.Builder
					for _, i := range sl[1:] {
						b.WriteString(f.hashes[i][:n])
					}
					hdr += fmt.Sprintf(",%d,%s", n, b.String())
				}
				if err := e.chunk(ctx, post, r.Wark, hdr, f.body(ofs, end-ofs), end-ofs); err != nil {
					errc <- fmt.Errorf("up2k %s: %w", f.name, err)
					return
				}
				moved.Add(end - ofs)
			}
		}()
	}
	func() {
		defer close(q)
		for _, sl := range slicesQ {
			select {
			case q <- sl:
			case err := <-errc:
				errc <- err
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	_, need, err = e.handshake(ctx, folder, f)
	if err != nil {
		return err
	}
	if len(need) > 0 {
		return fmt.Errorf("up2k %s: %d chunks still missing after the upload", f.name, len(need))
	}
	return nil
}

func (e *env) chunk(ctx context.Context, u, wark, hashes string, body io.Reader, n int64) error {
	req, err := http.NewRequestWithContext(ctx, "POST", u, body)
	if err != nil {
		return err
	}
	req.ContentLength = n
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("X-Up2k-Hash", hashes)
	req.Header.Set("X-Up2k-Wark", wark)
	resp, err := e.t.client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != 200 {
		return fmt.Errorf("chunk POST: %s: %s", resp.Status, clipBytes(b))
	}
	return nil
}

// bigHashes are the chunk hashes of the big fixture, computed once on all
// cores (chunk 0 changes with every upload, see bigVariant).
var bigHashes struct {
	sync.Mutex
	size int64
	h    []string
}

func (e *env) bigChunkHashes() ([]string, error) {
	bigHashes.Lock()
	defer bigHashes.Unlock()
	size := e.c.big
	if bigHashes.size == size && bigHashes.h != nil {
		return slices.Clone(bigHashes.h), nil
	}
	cs := up2k.ChunkSize(size)
	n := int(up2k.NumChunks(size, cs))
	h := make([]string, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, cs)
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				ofs := int64(i) * cs
				k, err := e.fx.big.ReadAt(buf[:min(cs, size-ofs)], ofs)
				if err != nil && err != io.EOF {
					firstErr.Store(err)
					return
				}
				h[i] = up2k.ChunkHash(buf[:k])
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return nil, err
	}
	bigHashes.size, bigHashes.h = size, h
	return slices.Clone(h), nil
}

var uploadSeq atomic.Int64

// bigVariant is the big fixture with its first 16 bytes replaced by this
// run's nonce and an upload number, so that no server already has the
// content (servers deduplicate by up2k hash); only chunk 0 is re-hashed.
func (e *env) bigVariant(name string) (*u2file, error) {
	h, err := e.bigChunkHashes()
	if err != nil {
		return nil, err
	}
	size := e.c.big
	cs := up2k.ChunkSize(size)
	var head [16]byte
	copy(head[:8], e.fx.nonce)
	binary.LittleEndian.PutUint64(head[8:], uint64(uploadSeq.Add(1)))
	c0 := make([]byte, min(cs, size))
	if _, err := e.fx.big.ReadAt(c0, 0); err != nil && err != io.EOF {
		return nil, err
	}
	copy(c0, head[:])
	h[0] = up2k.ChunkHash(c0)
	big := e.fx.big
	return &u2file{name: name, size: size, lmod: 1700000000, hashes: h, body: func(ofs, n int64) io.Reader {
		if ofs == 0 {
			return io.MultiReader(bytes.NewReader(head[:]), io.NewSectionReader(big, 16, n-16))
		}
		return io.NewSectionReader(big, ofs, n)
	}}, nil
}

func up2kLarge(e *env) ([]figure, error) {
	rel, abs, err := e.fx.upDir(e.t, "up2k-large", e.round)
	if err != nil {
		return nil, err
	}
	defer settle(abs)
	folder := e.url(rel + "/")
	var total time.Duration
	var n int
	var moved atomic.Int64
	for n == 0 || total < e.c.duration {
		name := fmt.Sprintf("u2-%d.bin", n)
		f, err := e.bigVariant(name)
		if err != nil {
			return nil, err
		}
		e.prefault(f.size)
		e.m.start()
		t0 := time.Now()
		err = e.u2upload(e.ctx, folder, f, e.c.jobs, &moved)
		total += time.Since(t0)
		e.m.stop()
		if err != nil {
			return nil, err
		}
		e.prog.add(1, f.size)
		if err := checkSize(abs+"/"+name, f.size); err != nil {
			return nil, err
		}
		settle(abs + "/" + name)
		n++
	}
	return []figure{{Name: fmt.Sprintf("%d conns, %d MiB chunks", e.c.jobs, up2k.ChunkSize(e.c.big)>>20),
		Unit: "MB/s", Value: float64(e.c.big) * float64(n) / total.Seconds() / 1e6}}, nil
}

// up2kMany uploads -many-n fresh small files (1 KiB to -many-max) over j
// connections, one file per connection at a time: handshake, chunks, final
// handshake. The files are made and hashed before the clock starts.
func up2kMany(e *env) ([]figure, error) {
	rel, abs, err := e.fx.upDir(e.t, "up2k-many", e.round)
	if err != nil {
		return nil, err
	}
	defer settle(abs)
	files := make([]*u2file, e.c.manyN)
	rs := stream(e.c.seed, "many")
	var total int64
	for i := range files {
		size := int64(1024 + rs.Uint64()%uint64(e.c.manyMax-1024+1))
		b := make([]byte, size)
		rs.Read(b)
		copy(b, fmt.Sprintf("%s %s %d %d\n", e.fx.nonce, e.t.name, e.round, i))
		cs := up2k.ChunkSize(size)
		var h []string
		for ofs := int64(0); ofs < size; ofs += cs {
			h = append(h, up2k.ChunkHash(b[ofs:min(size, ofs+cs)]))
		}
		files[i] = &u2file{name: fmt.Sprintf("m%05d.bin", i), size: size, lmod: 1700000000, hashes: h,
			body: func(ofs, n int64) io.Reader { return bytes.NewReader(b[ofs : ofs+n]) }}
		total += size
	}
	folder := e.url(rel + "/")
	var next atomic.Int64
	one := *e.c
	one.duration = time.Nanosecond // every worker: at least one op, then on while files remain
	e1 := *e
	e1.c = &one
	var lat []time.Duration
	var mu sync.Mutex
	st, err := load(&e1, e.c.jobs, false, func(ctx context.Context, w, i int, moved *atomic.Int64) error {
		for {
			k := int(next.Add(1) - 1)
			if k >= len(files) {
				return nil
			}
			t0 := time.Now()
			if err := e.u2upload(ctx, folder, files[k], 1, moved); err != nil {
				return err
			}
			d := time.Since(t0)
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
			e.prog.add(1, 0)
		}
	})
	if err != nil {
		return nil, err
	}
	st.lat = lat
	ents, _ := readDirNames(abs)
	if len(ents) != len(files) {
		return nil, fmt.Errorf("up2k-many: %d files on disk after uploading %d", len(ents), len(files))
	}
	return []figure{
		{Name: fmt.Sprintf("%d files of 1-%d KiB, %d conns", len(files), e.c.manyMax>>10, e.c.jobs), Unit: "files/s", Value: float64(len(files)) / st.elapsed.Seconds()},
		{Name: "throughput", Unit: "MB/s", Value: float64(total) / st.elapsed.Seconds() / 1e6},
		{Name: "per file p50", Unit: "ms", Value: st.pct(50), Lower: true},
		{Name: "per file p99", Unit: "ms", Value: st.pct(99), Lower: true},
	}, nil
}
