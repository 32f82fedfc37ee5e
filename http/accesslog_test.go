package http

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"
)

// slogAccess is the access line as slog writes it (the way it was made
// before accesslog.go): the reference appendAccess must match byte for byte.
func slogAccess(json bool, a *access) []byte {
	var buf bytes.Buffer
	var h slog.Handler = slog.NewTextHandler(&buf, nil)
	if json {
		h = slog.NewJSONHandler(&buf, nil)
	}
	h = h.WithAttrs([]slog.Attr{slog.String("pkg", "http")})
	r := slog.NewRecord(a.t, slog.LevelInfo, "access", 0)
	r.AddAttrs(slog.String("id", a.id), slog.String("ip", a.ip), slog.String("user", a.user), slog.String("method", a.method), slog.String("path", oldLogPath(a.u)), slog.Int("status", a.status), slog.Int64("bytes", a.bytes), slog.Duration("dur", a.dur))
	h.Handle(context.Background(), r)
	return buf.Bytes()
}

// oldLogPath is logPath as it was before it appended to a buffer.
func oldLogPath(u *url.URL) string {
	p := u.EscapedPath()
	if u.RawQuery == "" && !u.ForceQuery {
		return p
	}
	pieces := strings.Split(u.RawQuery, "&")
	for i, piece := range pieces {
		k, _, hasVal := strings.Cut(piece, "=")
		name, err := url.QueryUnescape(k)
		if hasVal && (err != nil || strings.Contains(strings.ToLower(name), "pw")) {
			pieces[i] = k + "=***"
		}
	}
	return p + "?" + strings.Join(pieces, "&")
}

func checkAccess(t *testing.T, a *access) {
	t.Helper()
	path := appendLogPath(nil, a.u)
	if want := oldLogPath(a.u); string(path) != want {
		t.Fatalf("logPath(%q) = %q, want %q", a.u.String(), path, want)
	}
	for _, json := range []bool{false, true} {
		got := appendAccess(nil, json, a, path)
		if want := slogAccess(json, a); !bytes.Equal(got, want) {
			t.Fatalf("json=%v:\n got %q\nwant %q", json, got, want)
		}
	}
}

func TestAccessLineMatchesSlog(t *testing.T) {
	loc := time.FixedZone("X", -(3*3600 + 30*60))
	for _, c := range []struct {
		id, ip, user, method, target string
		dur                          time.Duration
	}{
		{"abcd-1", "127.0.0.1", "", "GET", "/x.txt", 1234567 * time.Nanosecond},
		{"abcd-2", "::1", "boss", "PUT", "/a%20b/c?pw=hunter2&k=v", 0},
		{"e", "10.0.0.1", "us er", "PROPFIND", "/é/ü?ls&PW=x&p%77=y&%zz=q", 3 * time.Microsecond},
		{"e", "1.2.3.4", "q\"uote\\", "GET", "/?", 90 * time.Minute},
		{"", "", "tab\there", "G=T", "/\u2028?x=\x01\x7f", -5 * time.Second},
		{"\xff", "\u00a0", "\u2029", "GET", "/%ff%00?%ZZ", 999},
	} {
		u, err := url.ParseRequestURI(c.target)
		if err != nil {
			u = &url.URL{Path: c.target}
		}
		for _, tm := range []time.Time{time.Date(2026, 11, 24, 3, 4, 5, 999999999, time.UTC), time.Date(2001, 1, 2, 3, 4, 5, 0, loc), time.Now()} {
			checkAccess(t, &access{t: tm, id: c.id, ip: c.ip, user: c.user, method: c.method, u: u, status: 207, bytes: 1 << 40, dur: c.dur})
		}
	}
}

// FuzzAccessLine: for any request, the hand-made line is slog's line.
func FuzzAccessLine(f *testing.F) {
	f.Add("id-1", "127.0.0.1", "", "GET", "/a/b?pw=x&ls", "", int64(0), int64(1e9+7), int64(1764000000123456789))
	f.Add("", "::1", "a b", "PUT", "/é", "%zz", int64(-1), int64(-5), int64(0))
	f.Fuzz(func(t *testing.T, id, ip, user, method, path, rawQuery string, n, dur, unix int64) {
		tm := time.Unix(0, unix).UTC()
		if y := tm.Year(); y < 0 || y >= 10000 {
			return // slog's JSON refuses such years
		}
		u := &url.URL{Path: path, RawQuery: rawQuery}
		checkAccess(t, &access{t: tm, id: id, ip: ip, user: user, method: method, u: u, status: int(n % 1000), bytes: n, dur: time.Duration(dur)})
		if raw, err := url.ParseRequestURI(path); err == nil {
			checkAccess(t, &access{t: tm, id: id, ip: ip, user: user, method: method, u: raw, status: 200, bytes: n, dur: time.Duration(dur)})
		}
	})
}

// TestAccessLineNoAlloc: making and handing over a line allocates nothing.
func TestAccessLineNoAlloc(t *testing.T) {
	u, _ := url.ParseRequestURI("/some/folder/file.bin?dl&pw=secret&k=v")
	a := &access{t: time.Now(), id: "Ab3d-1x", ip: "192.168.1.20", user: "boss", method: "GET", u: u, status: 200, bytes: 4096, dur: 87 * time.Microsecond}
	for _, json := range []bool{false, true} {
		l := &AccessLog{W: io.Discard, JSON: json}
		l.write(a)
		if n := testing.AllocsPerRun(1000, func() { l.write(a) }); n != 0 {
			t.Errorf("json=%v: %v allocations per line, want 0", json, n)
		}
	}
}

// BenchmarkAccessLine is the logging path of one request: the line made
// by hand (AccessLog), and as it was made before, through slog.
func BenchmarkAccessLine(b *testing.B) {
	u, _ := url.ParseRequestURI("/some/folder/file.bin")
	a := &access{t: time.Now(), id: "Ab3d-1x", ip: "192.168.1.20", user: "", method: "GET", u: u, status: 200, bytes: 4096, dur: 87 * time.Microsecond}
	b.Run("hand", func(b *testing.B) {
		l := &AccessLog{W: io.Discard}
		b.ReportAllocs()
		for b.Loop() {
			l.write(a)
		}
	})
	b.Run("slog", func(b *testing.B) {
		log := slog.New(slog.NewTextHandler(io.Discard, nil)).With("pkg", "http")
		b.ReportAllocs()
		for b.Loop() {
			log.LogAttrs(context.Background(), slog.LevelInfo, "access", slog.String("id", a.id), slog.String("ip", a.ip), slog.String("user", a.user), slog.String("method", a.method), slog.String("path", oldLogPath(a.u)), slog.Int("status", a.status), slog.Int64("bytes", a.bytes), slog.Duration("dur", time.Since(a.t)))
		}
	})
}
