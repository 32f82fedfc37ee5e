package up2k

// The caps on unfinished uploads (--reg-cap, --reg-cap-ip) for uploads
// into object-store volumes, whose sessions live in the bucket and may
// have been started through any node. An address's unfinished uploads
// are the marks under its key in the bucket (store.Volume.UpMark), so
// every node counts them alike: one listing of that prefix per new
// upload. The count of all of them is read at most every
// remoteCountAge per volume (a listing of every mark) and kept current
// in between by this node's own starts and finishes; it is the server's
// cap, a guard against floods, and may be passed by what other nodes
// started within that time. Marks and local sessions add up: the caps
// are for everything this node serves.

import (
	"context"
	"fmt"
	"path"
	"slices"
	"sync"
	"time"

	"hoard/store"
)

// remoteCountAge is how long a volume's count of all marks is used.
const remoteCountAge = 2 * time.Second

type remoteCaps struct {
	// take serializes the new uploads into object-store volumes on this
	// node (count, then mark), so that a burst of handshakes cannot all
	// see room for one more: one mark PUT at a time, a few ms.
	take sync.Mutex
	mu   sync.Mutex
	all  map[*store.Volume]*markCount
}

type markCount struct {
	n  int
	at time.Time
}

// adjust changes the cached count of v by d.
func (c *remoteCaps) adjust(v *store.Volume, d int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if mc := c.all[v]; mc != nil {
		mc.n = max(0, mc.n+d)
	}
}

// remoteVols are the object-store volumes of the manager.
func (m *Manager) remoteVols() []*store.Volume {
	var out []*store.Volume
	for v := range *m.dbs.Load() {
		if v.Remote() {
			out = append(out, v)
		}
	}
	return out
}

// remoteTakePlace counts a new unfinished upload wark from ip into the
// object-store volume v against the caps, and marks it in the bucket;
// the mark goes when the file is published (remoteUnmark) or the
// session expires. It returns the address key.
func (m *Manager) remoteTakePlace(ctx context.Context, v *store.Volume, ip, wark string) (string, error) {
	key := store.ClientKey(ip)
	m.rcaps.take.Lock()
	defer m.rcaps.take.Unlock()
	m.mu.Lock()
	nIP, nAll := 0, m.caps.n
	if u := m.caps.per[key]; u != nil {
		nIP = u.n
	}
	capIP, capAll := m.caps.ip, m.caps.all
	m.mu.Unlock()
	for _, rv := range m.remoteVols() {
		n, err := rv.UpCountMarks(ctx, key, capIP+1)
		if err != nil {
			return "", err
		}
		nIP += n
		if nIP >= capIP {
			return "", &Error{Kind: Limited, Msg: fmt.Sprintf("too many unfinished uploads from your address (%d, at most %d); finish some first (an idle one is dropped after %v)", nIP, capIP, m.idle)}
		}
		c, err := m.remoteCountAll(ctx, rv, capAll+1)
		if err != nil {
			return "", err
		}
		nAll += c
	}
	if nAll >= capAll {
		return "", &Error{Kind: Unavailable, Msg: fmt.Sprintf("the server has too many unfinished uploads (%d); try again later", nAll)}
	}
	if err := v.UpMark(ctx, key, wark); err != nil {
		return "", err
	}
	m.rcaps.adjust(v, +1)
	return key, nil
}

// remoteCountAll is the count of every mark of v, read again when older
// than remoteCountAge.
func (m *Manager) remoteCountAll(ctx context.Context, v *store.Volume, max int) (int, error) {
	m.rcaps.mu.Lock()
	mc := m.rcaps.all[v]
	if mc != nil && time.Since(mc.at) < remoteCountAge {
		n := mc.n
		m.rcaps.mu.Unlock()
		return n, nil
	}
	m.rcaps.mu.Unlock()
	n, err := v.UpCountMarks(ctx, "", max)
	if err != nil {
		return 0, err
	}
	m.rcaps.mu.Lock()
	if m.rcaps.all == nil {
		m.rcaps.all = map[*store.Volume]*markCount{}
	}
	m.rcaps.all[v] = &markCount{n: n, at: time.Now()}
	m.rcaps.mu.Unlock()
	return n, nil
}

// remoteUnmark gives the place of the upload wark from ip back (it was
// published, or will not start): best effort, the expiry sweeps what it
// leaves.
func (m *Manager) remoteUnmark(ctx context.Context, v *store.Volume, ip, wark string) {
	if err := v.UpUnmark(context.WithoutCancel(ctx), store.ClientKey(ip), wark); err != nil {
		m.log.Warn("could not delete an upload's mark", "volume", "/"+v.VPath, "wark", wark, "err", err)
		return
	}
	m.rcaps.adjust(v, -1)
}

// maxRemoteUnfinished bounds the sessions UnfinishedAt reads from a
// bucket per volume (a GET and a listing each).
const maxRemoteUnfinished = 64

// UnfinishedAt is Unfinished with the uploads into object-store volumes
// from the address ip added, whichever node they went through: those
// its marks name (remotecaps.go), read from their session objects and
// chunk listings, at most maxRemoteUnfinished per volume. A store that
// cannot be read leaves its uploads out.
func (m *Manager) UnfinishedAt(ctx context.Context, ip string, keep func(*Unfinished) bool) []Unfinished {
	out := m.Unfinished(keep)
	key := store.ClientKey(ip)
	for _, v := range m.remoteVols() {
		var warks []string
		if err := v.UpMarks(ctx, key, maxRemoteUnfinished, func(w string, _ time.Time) { warks = append(warks, w) }); err != nil {
			m.log.Warn("could not list the unfinished uploads of an address", "volume", "/"+v.VPath, "err", err)
			continue
		}
		for _, w := range warks {
			rs := m.remote.get(v, w)
			if rs == nil {
				var ok bool
				var err error
				if rs, ok, err = m.loadRemote(ctx, v, w); err != nil || !ok {
					continue
				}
			}
			if rs.rec.Final != "" {
				continue
			}
			have, _, err := remoteHave(ctx, v, w)
			if err != nil {
				continue
			}
			done := int64(0)
			for u := 0; u < rs.t.nu; u++ {
				if have[rs.t.key(u)] {
					done += rs.t.length(u)
				}
			}
			u := Unfinished{Vol: v, Rel: path.Join(rs.rec.Dir, rs.rec.Name), Size: rs.rec.Size, Done: done, Started: time.Unix(0, rs.rec.Created), User: rs.rec.User, IP: rs.rec.IP}
			if keep(&u) {
				out = append(out, u)
			}
		}
	}
	slices.SortFunc(out, func(a, b Unfinished) int { return b.Started.Compare(a.Started) })
	return out
}
