package http

import (
	"net/url"
	"strings"
)

// logPath is a request's path and query as the logs show them: every pw
// parameter's value (however its name is escaped or cased) is replaced
// by "***", so no password reaches a log.
func logPath(u *url.URL) string {
	p := u.EscapedPath()
	if u.RawQuery == "" && !u.ForceQuery {
		return p
	}
	return p + "?" + redactQuery(u.RawQuery)
}

// redactQuery replaces the value of every pw parameter of a raw query.
// Go's query parser splits on & only. A piece whose name does not decode,
// or whose name holds pw (pwd, PW, p%77), has its value redacted too.
func redactQuery(raw string) string {
	pieces := strings.Split(raw, "&")
	for i, piece := range pieces {
		k, _, hasVal := strings.Cut(piece, "=")
		name, err := url.QueryUnescape(k)
		if hasVal && (err != nil || strings.Contains(strings.ToLower(name), "pw")) {
			pieces[i] = k + "=***"
		}
	}
	return strings.Join(pieces, "&")
}
