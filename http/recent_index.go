package http

import (
	"cmp"
	"slices"
	"time"

	"hoard/idx"
	"hoard/store"
)

// indexRecent serves ?ups and ?ru from the index for indexed volumes
// (so the records survive restarts) and from the in-memory ring for the
// rest. The ring also covers the moment between an upload and its
// (asynchronous) indexing; duplicates are dropped.
type indexRecent struct {
	ix   *idx.Indexer
	st   *store.Store
	ring RecentUploads
}

func (r *indexRecent) Recent(n int, keep func(*Upload) bool) []Upload {
	out := r.ring.Recent(n, keep)
	type seen struct {
		vol *store.Volume
		rel string
		at  int64
	}
	have := make(map[seen]bool, len(out))
	for _, u := range out {
		have[seen{u.Vol, u.Rel, u.At.Unix()}] = true
	}
	for _, v := range r.st.Volumes() {
		if !r.ix.Indexed(v) {
			continue
		}
		got := 0
		r.ix.Uploads(v, func(rec *idx.Record) bool {
			u := Upload{Vol: v, Rel: rec.Rel, Size: rec.Size, At: time.Unix(rec.At, 0), User: rec.Uploader, IP: rec.IP}
			if have[seen{v, u.Rel, rec.At}] || !keep(&u) {
				return true
			}
			have[seen{v, u.Rel, rec.At}] = true
			out = append(out, u)
			got++
			return got < n
		})
	}
	slices.SortStableFunc(out, func(a, b Upload) int { return cmp.Compare(b.At.UnixNano(), a.At.UnixNano()) })
	return out[:min(len(out), n)]
}
