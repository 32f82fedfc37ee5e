package store

// The index learns of changes through events, which it takes in after the
// change has been answered (hashing a PUT's file again takes time). A
// kill in between would lose the change to a plain -e2d index, which has
// no scan at start. So every change to an indexed volume is first noted
// in a Journal: a synced record that the index drops once it has taken the
// change in, and that start-up replays. A note says only "look at this
// path again"; a replay reads the file system as it is then, so it never
// undoes a later delete, replace or move.

// Journal keeps durable notes of changes until the index has taken them
// in. idx implements it over its database; main wires it with SetJournal.
type Journal interface {
	// Note records e durably (synced before it returns) and returns the
	// note's id, or 0 when e's volume is not indexed.
	Note(e Event) (uint64, error)
	// Forget drops the note id of volume v: its change did not happen,
	// was noted again under another id, or has been indexed. It need not
	// be synced.
	Forget(v *Volume, id uint64)
}

// SetJournal registers the journal. Call it before serving requests.
func (s *Store) SetJournal(j Journal) {
	s.subsMu.Lock()
	s.journal = j
	s.subsMu.Unlock()
}

func (s *Store) getJournal() Journal {
	s.subsMu.RLock()
	defer s.subsMu.RUnlock()
	return s.journal
}

// pendingNote is a note being written while the change it notes is made
// durable (its flush overlaps the file's).
type pendingNote struct {
	done chan struct{}
	id   uint64
	err  error
}

// canon is e as its volume's change when it was made through a view.
func canon(e Event) Event {
	if e.Vol != nil && e.Vol.outer != nil {
		e.Rel, e.Vol = e.Vol.outerRel(e.Rel), e.Vol.outer
	}
	return e
}

// noteAsync starts noting e. A nil result means there is no journal.
func (s *Store) noteAsync(e Event) *pendingNote {
	j := s.getJournal()
	if j == nil {
		return nil
	}
	e = canon(e)
	p := &pendingNote{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.id, p.err = j.Note(e)
	}()
	return p
}

// wait returns the note's id once it is durable.
func (p *pendingNote) wait() (uint64, error) {
	if p == nil {
		return 0, nil
	}
	<-p.done
	return p.id, p.err
}

// note records e durably and returns its id (0: nothing to note).
func (s *Store) note(e Event) (uint64, error) {
	if j := s.getJournal(); j != nil {
		return j.Note(canon(e))
	}
	return 0, nil
}

// forget drops a note whose change did not happen or was noted again.
func (s *Store) forget(v *Volume, id uint64) {
	if id == 0 {
		return
	}
	if j := s.getJournal(); j != nil {
		v, _ = v.Outer()
		j.Forget(v, id)
	}
}

// renote notes e, now under its final path, and forgets the note id made
// for the path it was meant to have (a collision rename).
func (s *Store) renote(e Event, id uint64) (uint64, error) {
	nid, err := s.note(e)
	if err == nil {
		s.forget(e.Vol, id)
	}
	return nid, err
}
