package store

import (
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestUploadMeta(t *testing.T) {
	w := strings.Repeat("aZ0-_", 8) + "abcd"
	u := UploadMeta(map[string]string{"hoard-at": "2026-01-02T03:04:05.5Z", "hoard-uploader": "ed", "hoard-ip": "::1", "hoard-wark": w, "hoard-lmod": "1600000000"})
	if !u.At.Equal(time.Date(2026, 1, 2, 3, 4, 5, 5e8, time.UTC)) || u.Uploader != "ed" || u.IP != "::1" || u.Wark != w || u.Lmod != 1600000000 {
		t.Errorf("UploadMeta = %+v", u)
	}
	// What another S3 client may have written is left out, not trusted.
	u = UploadMeta(map[string]string{"hoard-at": "yesterday", "hoard-uploader": "a\nb", "hoard-ip": "<script>", "hoard-wark": w + "x", "hoard-lmod": "-5"})
	if u != (Upload{}) {
		t.Errorf("UploadMeta of junk = %+v, want nothing", u)
	}
	if u := UploadMeta(nil); u != (Upload{}) {
		t.Errorf("UploadMeta(nil) = %+v", u)
	}
}

// FuzzUploadMeta: whatever the metadata, what UploadMeta keeps is well
// formed (a wark of 44 URL-safe characters, printable names, an address
// of address characters).
func FuzzUploadMeta(f *testing.F) {
	f.Add("2026-01-02T03:04:05Z", "ed", "127.0.0.1", strings.Repeat("A", 44), "17")
	f.Add("0000-01-01T00:00:00Z", "\x00", "1.2.3.4 x", strings.Repeat("+", 44), "x")
	f.Fuzz(func(t *testing.T, at, user, ip, wark, lmod string) {
		u := UploadMeta(map[string]string{"hoard-at": at, "hoard-uploader": user, "hoard-ip": ip, "hoard-wark": wark, "hoard-lmod": lmod})
		if u.Wark != "" && (u.Wark != wark || !isHash(u.Wark)) {
			t.Fatalf("wark %q kept as %q", wark, u.Wark)
		}
		if u.Uploader != "" && (!utf8.ValidString(u.Uploader) || strings.ContainsAny(u.Uploader, "\x00\n\r\x7f")) {
			t.Fatalf("uploader %q kept", u.Uploader)
		}
		if strings.Trim(u.IP, "0123456789abcdefABCDEF.:[]%") != "" || len(u.IP) > 64 {
			t.Fatalf("address %q kept", u.IP)
		}
		if u.Lmod < 0 || !u.At.IsZero() && u.At.Year() < 1970 {
			t.Fatalf("times %+v", u)
		}
	})
}

// FuzzChunkHashes: a list decodes to what was encoded; anything else
// decodes to well-formed hashes or an error.
func FuzzChunkHashes(f *testing.F) {
	f.Add([]byte(strings.Repeat("A", 44) + "\n" + strings.Repeat("b", 44) + "\n"))
	f.Add([]byte(strings.Repeat("A", 44)))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		hs, err := DecodeChunkHashes(b)
		if err != nil {
			return
		}
		for _, h := range hs {
			if !isHash(h) {
				t.Fatalf("%q decoded to the bad hash %q", b, h)
			}
		}
		again, err := DecodeChunkHashes(EncodeChunkHashes(hs))
		if err != nil || !slices.Equal(again, hs) {
			t.Fatalf("%q: round trip %q → %q, %v", b, hs, again, err)
		}
	})
}

// relOfKey gives a request path only for keys a request could reach.
func TestRelOfKey(t *testing.T) {
	v := &Volume{objPre: "pre/"}
	for key, want := range map[string]string{"pre/a": "a", "pre/a/b c.txt": "a/b c.txt"} {
		if got, ok := v.relOfKey(key); !ok || got != want {
			t.Errorf("relOfKey(%q) = %q, %v; want %q", key, got, ok, want)
		}
	}
	for _, key := range []string{"pre/", "pre/a/", "other/a", "pre/.hist/hashes/x", "pre/a/.HIST/b", "pre/a//b", "pre/../x",
		"pre/x.PARTIAL", "pre/a\x01", "pre/a\\b", "pre/./a", "pre"} {
		if got, ok := v.relOfKey(key); ok {
			t.Errorf("relOfKey(%q) = %q; want it left out", key, got)
		}
	}
}
