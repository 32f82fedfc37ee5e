package http

import (
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func TestForwardedFor(t *testing.T) {
	lo, _ := ParseTrusted("127.0.0.0/8,::1")
	lan, _ := ParseTrusted("lan")
	for _, c := range []struct {
		peer  string
		chain []string
		set   []netip.Prefix
		want  string
		ok    bool
	}{
		{"127.0.0.1:5000", nil, lo, "127.0.0.1", false},
		{"127.0.0.1:5000", []string{"203.0.113.9"}, lo, "203.0.113.9", true},
		{"198.51.100.1:5000", []string{"203.0.113.9"}, lo, "198.51.100.1", false},     // untrusted peer: header ignored
		{"127.0.0.1:5000", []string{"6.6.6.6, 203.0.113.9"}, lo, "203.0.113.9", true}, // the client's own claim on the left is not believed
		{"127.0.0.1:5000", []string{"6.6.6.6", "203.0.113.9, 10.0.0.2"}, lan, "203.0.113.9", true},
		{"127.0.0.1:5000", []string{"10.0.0.3, 10.0.0.2"}, lan, "10.0.0.3", true},
		{"127.0.0.1:5000", []string{"garbage, 203.0.113.9"}, lo, "203.0.113.9", true},
		{"127.0.0.1:5000", []string{"203.0.113.9, garbage"}, lo, "127.0.0.1", false},
		{"[::1]:80", []string{"[2001:db8::1]:4431"}, lo, "2001:db8::1", true},
		{"[::ffff:127.0.0.1]:80", []string{"::ffff:203.0.113.9"}, lo, "203.0.113.9", true},
		{"127.0.0.1:80", []string{"203.0.113.9"}, nil, "127.0.0.1", false},
	} {
		got, ok := forwardedFor(c.peer, c.chain, c.set)
		if got != c.want || ok != c.ok {
			t.Errorf("forwardedFor(%q, %q) = %q,%v; want %q,%v", c.peer, c.chain, got, ok, c.want, c.ok)
		}
	}
}

// FuzzForwardedFor: an untrusted peer's headers never count; whatever the
// chain says, the answer is the peer or a parseable address from the
// chain, never a trusted proxy while an untrusted hop exists to its right.
func FuzzForwardedFor(f *testing.F) {
	f.Add("127.0.0.1:1", "203.0.113.9, 10.0.0.1", "lan")
	f.Add("198.51.100.1:1", "1.2.3.4", "127.0.0.0/8")
	f.Add("[::1]:1", "[::2]:3,,x", "::1")
	f.Fuzz(func(t *testing.T, peer, chain, src string) {
		set, err := ParseTrusted(src)
		if err != nil {
			return
		}
		got, ok := forwardedFor(peer, []string{chain}, set)
		host := peer
		if h, _, err := net.SplitHostPort(peer); err == nil {
			host = h
		}
		pa, valid := parseHop(host)
		if !valid || !trusted(pa, set) {
			if ok {
				t.Fatalf("untrusted peer %q: its header was believed (%q)", peer, got)
			}
			return
		}
		if !ok {
			if got != pa.String() {
				t.Fatalf("no usable chain: got %q, want peer %q", got, pa)
			}
			return
		}
		a, err := netip.ParseAddr(got)
		if err != nil {
			t.Fatalf("answer %q is not an address", got)
		}
		if !strings.Contains(chain, strings.Trim(strings.SplitN(got, "%", 2)[0], "[]")) && !strings.Contains(strings.ToLower(chain), strings.ToLower(a.String())) {
			// Unmapped forms (::ffff:a.b.c.d) may be spelled differently.
			if !a.Is4() {
				t.Fatalf("answer %q not in chain %q", got, chain)
			}
		}
	})
}

func TestRedactQuery(t *testing.T) {
	for in, want := range map[string]string{
		"pw=hunter2":        "pw=***",
		"ls&pw=hunter2&x=1": "ls&pw=***&x=1",
		"PW=hunter2":        "PW=***",
		"p%77=hunter2":      "p%77=***",
		"ru&filter=a":       "ru&filter=a",
		"pw=a&pw=b":         "pw=***&pw=***",
		"%zz=secret":        "%zz=***",
	} {
		if got := redactQuery(in); got != want {
			t.Errorf("redactQuery(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzRedactQuery: no value Go's own parser would read as pw survives.
func FuzzRedactQuery(f *testing.F) {
	f.Add("pw=hunter2&x")
	f.Add("a=1&p%57=x;y")
	f.Fuzz(func(t *testing.T, raw string) {
		out := redactQuery(raw)
		vals, _ := url.ParseQuery(out)
		for k, vs := range vals {
			if strings.EqualFold(k, "pw") {
				for _, v := range vs {
					if v != "***" && v != "" {
						t.Fatalf("redactQuery(%q) = %q leaves pw %q", raw, out, v)
					}
				}
			}
		}
	})
}

func TestStripLocAndParseLoc(t *testing.T) {
	if l, err := ParseLoc("/files/"); err != nil || l != "/files" {
		t.Fatalf("ParseLoc = %q, %v", l, err)
	}
	for _, bad := range []string{"http://x/files", "/a//b", "/a?b"} {
		if _, err := ParseLoc(bad); err == nil {
			t.Errorf("ParseLoc(%q) accepted", bad)
		}
	}
	for in, want := range map[string]string{"/files": "/", "/files/": "/", "/files/a/b": "/a/b", "/filesx/a": "/filesx/a", "/a": "/a"} {
		if got := stripLoc(in, "/files"); got != want {
			t.Errorf("stripLoc(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzAddrString: addrString is netip.Addr.String whatever the text the
// address was read from (a mapped v4, leading zeros, upper-case hex,
// blanks), and gives the text itself back without allocating when it is
// the same.
func FuzzAddrString(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "::ffff:1.2.3.4", "::1", "2001:DB8::1", "2001:db8:0:0::1", " 10.0.0.1", "0:0:0:0:0:0:0:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := parseHop(s)
		if !ok {
			return
		}
		if got, want := addrString(a, s), a.String(); got != want {
			t.Fatalf("addrString(%q) = %q, want %q", s, got, want)
		}
		if s == a.String() {
			if n := testing.AllocsPerRun(10, func() { addrString(a, s) }); n != 0 {
				t.Fatalf("addrString(%q) allocates %v times", s, n)
			}
		}
	})
}
