// Package media makes derived forms of files: thumbnails (images decoded
// in pure Go, videos and audio through FFmpeg), waveforms and audio
// transcodes, for ?th and the archive modifiers. All jobs share one
// bounded worker pool with a queue deadline; identical concurrent requests
// share one job; outputs are cached below each volume's state folder
// (.hist/th), keyed by the file's identity and the parameters, with a size
// cap. FFmpeg runs niced, with a timeout, in its own process group, on an
// already opened file passed as a descriptor.
package media
