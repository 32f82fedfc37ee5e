// Package arch writes archives and compressed streams to an io.Writer,
// never buffering a whole archive. This first part holds the compressors
// shared by uploads (PUT ?gz, ?xz) and, later, by tar archives.
package arch
