package http

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// ProxyConfig says which peers are trusted reverse proxies and where they
// mount hoard (--xff-src, --xff-hdr, --rp-loc).
type ProxyConfig struct {
	// Trusted are the peers whose forwarding headers are believed.
	Trusted []netip.Prefix
	// Header carries the client chain (default X-Forwarded-For).
	Header string
	// Loc is the URL prefix the proxy serves hoard under ("" or "/a/b",
	// no trailing slash): every URL hoard emits starts with it, and a
	// request path starting with it has it removed.
	Loc string
}

// lanRanges are what --xff-src lan trusts: private, link-local and
// loopback ranges.
var lanRanges = []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fd00::/8", "169.254.0.0/16", "fe80::/10", "127.0.0.0/8", "::1/128"}

// ParseTrusted reads --xff-src: comma-separated CIDRs or addresses; the
// word lan stands for the private ranges, any for every address, none
// (or an empty list) for no proxy at all.
func ParseTrusted(csv string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(csv, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		switch f {
		case "", "none":
			continue
		case "lan", "local", "private":
			for _, c := range lanRanges {
				out = append(out, netip.MustParsePrefix(c))
			}
			continue
		case "any", "all":
			out = append(out, netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0"))
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("--xff-src: %q is neither a CIDR nor an address", f)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// ParseLoc reads --rp-loc: a URL path such as /files or /a/b/ (not a URL).
func ParseLoc(s string) (string, error) {
	if strings.Contains(s, "//") || strings.Contains(s, ":") || strings.ContainsAny(s, "?#%\\ ") {
		return "", fmt.Errorf("--rp-loc %q: want just the location, for example /files", s)
	}
	s = strings.Trim(s, "/")
	if s == "" {
		return "", nil
	}
	return "/" + s, nil
}

func trusted(a netip.Addr, set []netip.Prefix) bool {
	a = a.Unmap()
	for _, p := range set {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseHop reads one element of a forwarding chain: an address, an
// address:port, or [v6]:port.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil && ap.Addr().Zone() == "" {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// forwardedFor decides who the client is. peer is the TCP peer's address
// (host[:port]); chain are the values of the forwarding header. Only a
// trusted peer's header counts. Its chain is read right to left (each
// proxy appends the address it got the request from): the first address
// that is not itself a trusted proxy is the client. A hop that is not an
// address ends the walk at the last one read (nothing left of a garbled
// hop is believed); a chain of trusted proxies only gives its left-most.
// ok reports that the answer came from the header.
func forwardedFor(peer string, chain []string, set []netip.Prefix) (ip string, ok bool) {
	host := peer
	if h, _, err := net.SplitHostPort(peer); err == nil {
		host = h
	}
	pa, valid := parseHop(host)
	if !valid {
		return host, false
	}
	ip = addrString(pa, host)
	if len(chain) == 0 || !trusted(pa, set) {
		return ip, false
	}
	var hops []string
	for _, v := range chain {
		hops = append(hops, strings.Split(v, ",")...)
	}
	got := ""
	for i := len(hops) - 1; i >= 0; i-- {
		if strings.TrimSpace(hops[i]) == "" {
			continue
		}
		a, valid := parseHop(hops[i])
		if !valid {
			break
		}
		got = a.String()
		if !trusted(a, set) {
			break
		}
	}
	if got == "" {
		return ip, false
	}
	return got, true
}

// addrString is a.String(), or text itself when that is what it says
// already (a TCP peer's address usually is): no allocation then.
func addrString(a netip.Addr, text string) string {
	var b [64]byte
	if string(a.AppendTo(b[:0])) == text {
		return text
	}
	return a.String()
}

// decodeProxy fills q's client address, scheme and host from the TCP peer
// and, when the peer is a trusted proxy, from its forwarding headers.
func (s *Server) decodeProxy(q *req) {
	r := q.r
	q.ip, q.viaProxy = forwardedFor(r.RemoteAddr, r.Header.Values(s.proxy.Header), s.proxy.Trusted)
	q.scheme, q.host = "http", r.Host
	if r.TLS != nil {
		q.scheme = "https"
	}
	if q.viaProxy {
		if p := strings.ToLower(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto"))); p == "https" || p == "http" {
			q.scheme = p
		}
		if h := strings.TrimSpace(r.Header.Get("X-Forwarded-Host")); h != "" && validHost(h) {
			q.host = h
		}
	}
}

// validHost accepts a Host-like value: no spaces, slashes or controls.
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		if c := h[i]; c <= ' ' || c == '/' || c == '\\' || c == '@' || c == '?' || c == '#' || c >= 0x7f {
			return false
		}
	}
	return true
}

// stripLoc removes the --rp-loc prefix from a request path, if it has it.
func stripLoc(p, loc string) string {
	if loc == "" {
		return p
	}
	if p == loc {
		return "/"
	}
	if strings.HasPrefix(p, loc+"/") {
		return p[len(loc):]
	}
	return p
}

// abs is the absolute URL of an escaped URL path (starting with /) as the
// client sees it: scheme, host and the proxy's prefix.
func (q *req) abs(p string) string {
	return q.scheme + "://" + q.host + q.loc + p
}

// conn names the client's connection for ?dls: the TCP peer's ip:port, or
// the forwarded address behind a trusted proxy (its port is the proxy's).
func (q *req) conn() string {
	if q.viaProxy {
		return q.ip
	}
	return q.r.RemoteAddr
}

// unloc is a server path a client named in a query or body (a move's
// destination, a path to delete) without the --rp-loc prefix a client
// behind the proxy writes: the URL paths hoard hands out carry it.
func (q *req) unloc(p string) string {
	if q.loc == "" || p == "" {
		return p
	}
	if !strings.HasPrefix(p, "/") {
		return strings.TrimPrefix(stripLoc("/"+p, q.loc), "/")
	}
	return stripLoc(p, q.loc)
}
