// Package http turns HTTP requests into calls on hoard's domain packages
// and their results into copyparty-compatible responses.
//
// Every request goes through one path function (parsePath), one credential
// check (authenticate) and one error table (statusOf). Handlers never open
// files themselves: store hands them *os.File values, which leave through
// http.ServeContent so that bodies are sent with sendfile(2).
//
// %2F in a URL path is decoded like any other escape and so separates
// folders, as in copyparty: a name can never contain a slash, and decoding
// happens exactly once, so %252e arrives as the literal name "%2e".
package http
