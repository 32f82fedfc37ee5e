package http

import (
	"mime"
	"path"
	"strings"
)

// mimeTypes fixes the types of common extensions so that responses do not
// depend on the host's /etc/mime.types; others fall back to Go's table.
var mimeTypes = map[string]string{
	"txt": "text/plain; charset=utf-8", "md": "text/plain; charset=utf-8", "log": "text/plain; charset=utf-8",
	"csv": "text/csv; charset=utf-8", "html": "text/html; charset=utf-8", "htm": "text/html; charset=utf-8",
	"css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8", "mjs": "text/javascript; charset=utf-8",
	"json": "application/json", "xml": "application/xml", "svg": "image/svg+xml", "pdf": "application/pdf",
	"jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif", "webp": "image/webp",
	"avif": "image/avif", "bmp": "image/bmp", "ico": "image/x-icon", "tif": "image/tiff", "tiff": "image/tiff",
	"heic": "image/heic", "jxl": "image/jxl",
	"mp3": "audio/mpeg", "flac": "audio/flac", "ogg": "audio/ogg", "opus": "audio/ogg; codecs=opus",
	"m4a": "audio/mp4", "aac": "audio/aac", "wav": "audio/wav", "wma": "audio/x-ms-wma", "caf": "audio/x-caf",
	"mp4": "video/mp4", "m4v": "video/mp4", "mkv": "video/x-matroska", "webm": "video/webm", "mov": "video/quicktime",
	"avi": "video/x-msvideo", "ts": "video/mp2t",
	"zip": "application/zip", "tar": "application/x-tar", "gz": "application/gzip", "tgz": "application/gzip",
	"xz": "application/x-xz", "bz2": "application/x-bzip2", "zst": "application/zstd", "7z": "application/x-7z-compressed",
	"iso": "application/x-iso9660-image", "bin": "application/octet-stream", "wasm": "application/wasm",
}

// contentType guesses a file's type from its name's extension.
func contentType(name string) string {
	ext := strings.ToLower(strings.TrimPrefix(path.Ext(name), "."))
	if t, ok := mimeTypes[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension("." + ext); ext != "" && t != "" {
		return t
	}
	return "application/octet-stream"
}

// activeType reports whether a browser could run script from a response of
// this type in the server's origin; such responses get a sandbox CSP.
func activeType(ct string) bool {
	ct = strings.ToLower(ct)
	for _, s := range []string{"html", "xml", "svg", "javascript", "ecmascript", "xsl"} {
		if strings.Contains(ct, s) {
			return true
		}
	}
	return false
}
