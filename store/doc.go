// Package store owns the volumes hoard serves: where each is mounted, who may
// do what in it, and every file-system operation inside it.
//
// Each volume holds one *os.Root, so nothing a request names can resolve
// outside the volume's folder, symbolic links included. Writes are atomic:
// a temporary file in the target folder is written, synced, published under
// its final name without clobbering anything (or replacing, when asked), and
// the folder is synced before the caller is told the file exists.
//
// store knows nothing about HTTP, the index or uploads in progress; other
// packages learn about changes through Subscribe.
package store
