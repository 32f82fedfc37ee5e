package store

import "time"

// EventKind says what happened to a file.
type EventKind uint8

const (
	Created EventKind = iota + 1 // a file was published, replaced or appended to
	Removed                      // a file was deleted (e.g. its lifetime ended); with Tree, a folder and everything below it
	Moved                        // FromVol/From is now Vol/Rel (same or another volume); with Tree, a folder and everything below it
	Copied                       // FromVol/From was copied to Vol/Rel; with Tree, a folder and everything below it
	MadeDir                      // an empty folder was made at Rel
	Touched                      // a file's mtime was set (Mtime); its content is unchanged
)

func (k EventKind) String() string {
	switch k {
	case Created:
		return "created"
	case Removed:
		return "removed"
	case Moved:
		return "moved"
	case Copied:
		return "copied"
	case MadeDir:
		return "mkdir"
	case Touched:
		return "touched"
	}
	return "unknown"
}

// Event describes one change to a volume, for subscribers such as the index.
//
// A change to a whole folder tree is one event with Tree set, however many
// files the tree holds, so that subscribers keep their memory flat: Rel
// (and From) then name the folder, and the change covers every path equal
// to it or below it ("Rel/..."). A Removed tree event is also sent when a
// tree delete stopped half-way (an error, a cancelled context): the files
// below Rel may then be partly gone, so a subscriber that keeps a record
// per file checks the file system before forgetting one.
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

	// Tree: Rel (and From) name a folder, and the change covers it and
	// everything below it (Removed, Moved, Copied).
	Tree bool
	// FromVol and From are where a Moved or Copied file or tree was.
	FromVol *Volume
	From    string
}

// Under reports whether rel is the event's path or, for a tree event,
// lies below it.
func (e *Event) Under(rel string) bool { return underRel(rel, e.Rel, e.Tree) }

// FromUnder reports whether rel is the event's source path (From) or, for
// a tree event, lies below it.
func (e *Event) FromUnder(rel string) bool { return underRel(rel, e.From, e.Tree) }

// underRel reports whether rel is base or, when tree is set, lies below it
// (base "" is the volume's top, which holds everything).
func underRel(rel, base string, tree bool) bool {
	if rel == base {
		return true
	}
	if !tree {
		return false
	}
	return base == "" || (len(rel) > len(base) && rel[len(base)] == '/' && rel[:len(base)] == base)
}

// Rebase returns rel, a path under the event's From (FromUnder), moved to
// the same place under Rel.
func (e *Event) Rebase(rel string) string {
	if rel == e.From {
		return e.Rel
	}
	suffix := rel[len(e.From):] // "/..." below From
	if e.From == "" {
		suffix = "/" + rel
	}
	if e.Rel == "" {
		return suffix[1:]
	}
	return e.Rel + suffix
}

// Subscribe registers fn to be called after every change, on the goroutine
// that made it, before the change's caller is answered. fn must be quick
// (a tree change is one event, see Event) and must not start another
// change through the store. Subscribe before serving requests.
func (s *Store) Subscribe(fn func(Event)) {
	s.subsMu.Lock()
	s.subs = append(s.subs, fn)
	s.subsMu.Unlock()
}

func (s *Store) emit(e Event) {
	if e.Vol != nil && e.Vol.outer != nil {
		// A change made through a view is its volume's change.
		e.Rel, e.Vol = e.Vol.outerRel(e.Rel), e.Vol.outer
	}
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
