package store

import "net/netip"

// ClientKey is the address a client is counted under by every per-client
// limit (unfinished uploads, wrong-password slowdown): an IPv4 address, or
// an IPv6 client's /64, since one machine commonly holds a whole /64 and
// could otherwise take a fresh address for every try. Anything that does
// not parse is its own key.
func ClientKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	p, err := a.Prefix(64)
	if err != nil {
		return a.String()
	}
	return p.String()
}
