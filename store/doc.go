// Package store owns the volumes hoard serves: where each is mounted, who may
// do what in it, and every file-system operation inside it.
//
// Each volume holds one *os.Root, so nothing a request names can resolve
// outside the volume's folder, symbolic links included. Writes are atomic:
// a temporary file in the target folder is written, synced, published under
// its final name without clobbering anything (or replacing, when asked), and
// the folder is synced before the caller is told the file exists.
//
// File management (manage.go: Delete, Move, Copy, Mkdir) checks the
// permissions at both ends, refuses with an *OpError of a Kind, walks
// trees in constant memory without following links, and journals what a
// crash could leave half done (manage_journal.go).
//
// store knows nothing about HTTP, the index or uploads in progress; other
// packages learn about changes through Subscribe (one event per tree), and
// unpost asks an injected UploadLookup (the index) who uploaded a file.
package store
