package up2k

import (
	"fmt"

	"hoard/store"
)

// caps bounds the unfinished uploads: in all, and per client address,
// where an address may also hold at most half of the free space it could
// have (once it has one unfinished upload), so that one client cannot
// promise itself the whole disk. Guarded by Manager.mu.
type caps struct {
	all, ip int
	n       int               // unfinished uploads counted
	per     map[string]*ipUse // by store.ClientKey
}

type ipUse struct {
	n     int
	bytes int64 // the sizes of its unfinished uploads
}

// takePlace counts a new unfinished upload of size bytes from ip into v
// against the caps, or says why it may not start.
func (m *Manager) takePlace(v *store.Volume, ip string, size int64) (string, error) {
	key := store.ClientKey(ip)
	free, claimed, ferr := v.Room()
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.caps.per[key]
	switch {
	case m.caps.n >= m.caps.all:
		return "", &Error{Kind: Unavailable, Msg: fmt.Sprintf("the server has too many unfinished uploads (%d); try again later", m.caps.n)}
	case u != nil && u.n >= m.caps.ip:
		return "", &Error{Kind: Limited, Msg: fmt.Sprintf("too many unfinished uploads from your address (%d, at most %d); finish some first (an idle one is dropped after %v)", u.n, m.caps.ip, m.idle)}
	case u != nil && u.n > 0 && ferr == nil && uint64(size) <= free:
		// (An upload larger than the free space is refused by its claim,
		// as the client's error.)
		avail := int64(free) - int64(claimed) + u.bytes // what this address could hold
		if u.bytes+size > avail/2 {
			return "", &Error{Kind: Limited, Msg: fmt.Sprintf("your unfinished uploads would hold more than half of the server's free space (%s free, %s promised to your unfinished uploads, this one needs %s); finish some first",
				store.HumanSize(int64(free)), store.HumanSize(u.bytes), store.HumanSize(size))}
		}
	}
	if u == nil {
		u = &ipUse{}
		m.caps.per[key] = u
	}
	u.n++
	u.bytes += size
	m.caps.n++
	return key, nil
}

// givePlace undoes takePlace.
func (m *Manager) givePlace(key string, size int64) {
	m.mu.Lock()
	m.givePlaceLocked(key, size)
	m.mu.Unlock()
}

func (m *Manager) givePlaceLocked(key string, size int64) {
	m.caps.n--
	if u := m.caps.per[key]; u != nil {
		u.n--
		u.bytes -= size
		if u.n <= 0 {
			delete(m.caps.per, key)
		}
	}
}

// countLocked counts a session restored after a restart against the caps
// (whatever they say: it was promised before) and holds its free space.
func (m *Manager) countLocked(s *session) {
	key := store.ClientKey(s.rec.IP)
	u := m.caps.per[key]
	if u == nil {
		u = &ipUse{}
		m.caps.per[key] = u
	}
	u.n++
	u.bytes += s.rec.Size
	m.caps.n++
	s.counted, s.ipKey = true, key
	s.space = s.vol.Hold(s.rec.Size)
}
