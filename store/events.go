package store

import "time"

// EventKind says what happened to a file.
type EventKind uint8

const (
	Created EventKind = iota + 1 // a file was published, replaced or appended to
	Removed                      // a file was deleted (e.g. its lifetime ended)
)

// Event describes one change to a volume, for subscribers such as the index.
type Event struct {
	Kind     EventKind
	Vol      *Volume
	Rel      string // slash-separated path inside the volume
	Size     int64
	Mtime    time.Time
	At       time.Time // when the change happened (upload time)
	Uploader string    // account name; "" for anonymous or the server itself
	ClientIP string
	// Wark and Chunks are the new content's up2k identity when the writer
	// knew it (up2k uploads), for a file of exactly Size and Mtime.
	Wark   string
	Chunks []string
	// Note is the change's journal note (journal.go), 0 when it has none;
	// the index forgets it once the change is indexed.
	Note uint64
}

// Subscribe registers fn to be called after every change, on the goroutine
// that made it. fn must be quick and must not call back into the store's
// write paths. Subscribe before serving requests.
func (s *Store) Subscribe(fn func(Event)) {
	s.subsMu.Lock()
	s.subs = append(s.subs, fn)
	s.subsMu.Unlock()
}

func (s *Store) emit(e Event) {
	if e.Note == 0 {
		// A change that was not noted ahead (to overlap the note's flush
		// with the change's own) is noted now, before it is answered.
		var err error
		if e.Note, err = s.note(e); err != nil {
			s.log.Error("noting a change for the index failed; a crash before it is indexed loses it from search until a scan", "volume", "/"+e.Vol.VPath, "path", e.Rel, "err", err)
		}
	}
	s.subsMu.RLock()
	subs := s.subs
	s.subsMu.RUnlock()
	for _, fn := range subs {
		fn(e)
	}
}
