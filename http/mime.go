package http

import (
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/text/encoding/htmlindex"
)

// mimeTypes fixes the types of common extensions so that responses do not
// depend on the host's /etc/mime.types; others fall back to Go's table.
var mimeTypes = map[string]string{
	"txt": "text/plain; charset=utf-8", "md": "text/plain; charset=utf-8", "log": "text/plain; charset=utf-8",
	"csv": "text/csv; charset=utf-8", "html": "text/html; charset=utf-8", "htm": "text/html; charset=utf-8",
	"css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8", "mjs": "text/javascript; charset=utf-8",
	"json": "application/json", "xml": "application/xml", "svg": "image/svg+xml", "pdf": "application/pdf",
	"xhtml": "application/xhtml+xml", "xht": "application/xhtml+xml", "svgz": "image/svg+xml",
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

// inertTypes are the media types a browser shows (or saves) without running
// anything from them in the server's origin: text shown as text (with
// nosniff), pictures other than SVG, sound, video, data and archives. They
// go out inline and without a sandbox, so that players and viewers work.
// The list is an allow-list: a type not on it is never taken for harmless.
var inertTypes = map[string]bool{
	"text/plain": true, "text/csv": true, "text/tab-separated-values": true, "text/markdown": true,
	"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true, "image/avif": true,
	"image/bmp": true, "image/x-icon": true, "image/vnd.microsoft.icon": true, "image/tiff": true,
	"image/heic": true, "image/heif": true, "image/jxl": true, "image/apng": true,
	"audio/mpeg": true, "audio/mp3": true, "audio/flac": true, "audio/x-flac": true, "audio/ogg": true,
	"audio/opus": true, "audio/mp4": true, "audio/aac": true, "audio/wav": true, "audio/x-wav": true,
	"audio/wave": true, "audio/webm": true, "audio/x-ms-wma": true, "audio/x-caf": true, "audio/x-matroska": true,
	"video/mp4": true, "video/webm": true, "video/ogg": true, "video/x-matroska": true, "video/quicktime": true,
	"video/x-msvideo": true, "video/mp2t": true, "video/mpeg": true, "video/3gpp": true,
	"application/octet-stream": true, "application/json": true, "application/pdf": true,
	"application/zip": true, "application/gzip": true, "application/x-tar": true, "application/x-xz": true,
	"application/x-bzip2": true, "application/zstd": true, "application/x-7z-compressed": true,
	"application/x-iso9660-image": true, "application/wasm": true,
}

// viewableTypes are the document types a browser renders, script and all,
// and in which it honours a Content-Security-Policy sandbox: a file of
// one of these (by its extension) is shown inline in a sandbox, with an
// opaque origin and no script. Any other type not inert goes out as an
// attachment in a sandbox: the browser saves it instead of rendering it
// (multipart/x-mixed-replace, RDF, XSLT, XUL, MHTML, Flash... each of which
// some browser has rendered with script, or out of reach of the policy).
var viewableTypes = map[string]bool{
	"text/html": true, "application/xhtml+xml": true, "image/svg+xml": true,
	"application/xml": true, "text/xml": true, "text/css": true, "text/javascript": true,
}

// bodyPolicy is how a body of some type must be sent.
type bodyPolicy struct {
	sandbox bool // Content-Security-Policy: sandbox
	attach  bool // Content-Disposition: attachment, whatever was asked
}

// policyOf decides how a body of type ct goes out. fromClient is set when
// the client chose the type (?mime=): then only an inert type is shown
// inline.
func policyOf(ct string, fromClient bool) bodyPolicy {
	return parsePolicy(ct, fromClient)
}

// typePolicy is policyOf(ct, false) for a type contentType gave, which
// comes from a finite set: each is parsed once, not on every download. A
// type from anywhere else (a client's word) must go through policyOf.
func typePolicy(ct string) bodyPolicy {
	if p, ok := typePolicies.Load(ct); ok {
		return p.(bodyPolicy)
	}
	p := parsePolicy(ct, false)
	if typePoliciesN.Add(1) <= typePoliciesMax {
		typePolicies.Store(ct, p)
	}
	return p
}

// typePolicies memoizes typePolicy, for at most typePoliciesMax types
// (a bound that the finite set never reaches, kept should that change).
var (
	typePolicies  sync.Map // string → bodyPolicy
	typePoliciesN atomic.Int64
)

const typePoliciesMax = 4096

func parsePolicy(ct string, fromClient bool) bodyPolicy {
	mt, _, err := mime.ParseMediaType(ct)
	mt = strings.ToLower(mt)
	switch {
	case err == nil && inertTypes[mt]:
		return bodyPolicy{}
	case err == nil && viewableTypes[mt] && !fromClient:
		return bodyPolicy{sandbox: true}
	}
	return bodyPolicy{sandbox: true, attach: true}
}

// Constant header values, shared by every response so that setting one
// costs no allocation (a small GET set four such headers). Nothing writes
// a header's slice in place: net/http and this package replace values or
// append, and an append to these full slices copies them.
var (
	hvNosniff = []string{"nosniff"}
	hvSandbox = []string{"sandbox"}
	hvBytes   = []string{"bytes"}
	hvNoCache = []string{"no-cache"}
)

// apply sets the body's type headers: Content-Type, nosniff, and the
// sandbox when due. It returns the disposition ("inline" unless the type
// or want say "attachment").
func (p bodyPolicy) apply(h http.Header, ct, want string) string {
	h["Content-Type"] = []string{ct}
	return p.applyRest(h, want)
}

// applyRest is apply without the Content-Type, which the caller sets.
func (p bodyPolicy) applyRest(h http.Header, want string) string {
	h["X-Content-Type-Options"] = hvNosniff
	if p.sandbox {
		h["Content-Security-Policy"] = hvSandbox
	}
	if p.attach {
		return "attachment"
	}
	return want
}

// parseMime checks a ?mime= value and returns it as the Content-Type to
// send: type/subtype, lower-cased, plus a charset parameter when it names
// a WHATWG encoding; other parameters are dropped (a boundary or version
// means nothing for one file). ok is false for anything else.
func parseMime(v string) (ct string, ok bool) {
	if strings.ContainsAny(v, "\r\n\x00") || len(v) > 256 {
		return "", false
	}
	mt, params, err := mime.ParseMediaType(v)
	if err != nil {
		return "", false
	}
	typ, sub, found := strings.Cut(mt, "/")
	if !found || typ == "" || sub == "" || strings.Contains(sub, "/") {
		return "", false
	}
	out := map[string]string{}
	if cs, ok := params["charset"]; ok {
		if _, err := htmlindex.Get(cs); err != nil {
			return "", false
		}
		out["charset"] = strings.ToLower(cs)
	}
	ct = mime.FormatMediaType(mt, out)
	return ct, ct != ""
}
