// Package up2k implements copyparty's resumable upload protocol on top of
// store: chunk sizing, chunk hashes and warks, upload sessions, the
// parallel chunk writer that verifies every chunk with SHA-512 as it
// streams into a sparse preallocated <name>.PARTIAL file, resumption after
// client and server restarts, and publishing the finished file through
// store.
//
// up2k knows nothing of HTTP: it takes readers and typed arguments and
// returns *Error values whose Kind the HTTP layer maps to a status. It
// persists sessions through the SessionStore interface, which idx
// implements over Pebble; main wires the two together.
//
// Durability: a chunk is reported written only after its bytes were
// fdatasync'ed and its receipt was committed synchronously to the session
// store; a file is reported complete only after it was fsynced, published
// without clobbering, its folder fsynced and its record committed.
package up2k
