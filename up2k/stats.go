package up2k

// Stats are the manager's counters since start, for the metrics.
type Stats struct {
	Unfinished int   // uploads with a session in memory, not yet published
	Finished   int64 // uploads published
	BadChunks  int64 // chunks refused because their bytes did not match their hash
	Posts      int64 // chunk posts in flight
}

// Stats reads the counters; it takes the session table's lock briefly.
func (m *Manager) Stats() Stats {
	st := Stats{Finished: m.finished.Load(), BadChunks: m.badChunks.Load(), Posts: m.posts.Load()}
	m.mu.Lock()
	st.Unfinished = len(m.sessions) // published sessions leave the table (remove)
	m.mu.Unlock()
	return st
}
