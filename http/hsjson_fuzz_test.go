package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"testing"

	"hoard/up2k"
)

// refHandshakeOf is handshakeOf as it was before the map-free reading
// (everything through encoding/json), the model the fast way must match.
func refHandshakeOf(f map[string]json.RawMessage) (up2k.Handshake, error) {
	var h up2k.Handshake
	bad := func(field, want string) error {
		return errorf(400, "handshake field %q: want %s, got %.60s", field, want, f[field])
	}
	if err := json.Unmarshal(f["name"], &h.Name); err != nil || f["name"] == nil {
		return h, bad("name", "a string")
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(f["size"])), 10, 64)
	if err != nil {
		return h, bad("size", "an integer number of bytes")
	}
	h.Size = n
	if v := f["lmod"]; v != nil {
		var t float64
		if json.Unmarshal(v, &t) == nil && !math.IsNaN(t) && t > 0 && t < 1<<40 {
			h.Lmod = int64(t)
		}
	}
	if v := f["hash"]; v != nil && string(bytes.TrimSpace(v)) != "null" {
		if err := json.Unmarshal(v, &h.Hashes); err != nil {
			return h, bad("hash", "an array of chunk hashes (strings)")
		}
	} else if h.Size != 0 {
		return h, bad("hash", "an array of chunk hashes (strings)")
	}
	if h.Hashes == nil {
		h.Hashes = []string{}
	}
	// replace, rand, umod and life are read by the same code either way.
	return h, nil
}

// FuzzHandshakeFields: for any body, the map-free reading of a handshake
// (objectFields, then handshakeOf over its members) takes exactly the
// bodies that are JSON objects, sees the same members with the same raw
// values as encoding/json's map, tells a search apart the same way, and
// yields the same handshake or the same refusal as the reading through
// encoding/json alone.
func FuzzHandshakeFields(f *testing.F) {
	h := up2k.ChunkHash([]byte("one"))
	for _, s := range []string{
		`{"hash": ["` + h + `"],
"name": "f\u00e9 1.bin",
"lmod": 1732400000.123,
"size": 3}`,
		`{"name": "f1", "size": 3, "lmod": 1234567890, "hash": ["` + h + `", "` + h + `"]}`,
		`{"name":"a","size":0,"hash":[]}`,
		`{"name": "a\"b", "size": 3, "hash": ["x\\y"], "lmod": 1e400}`,
		`{"n\u0061me": "x", "size": 1, "hash": ["a"]}`,
		`{"name": "x", "name": "y", "size": 1, "hash": ["a"], "q": "z"}`,
		`{"name": "x", "size": 1, "hash": [1, null], "extra": {"a": [1, {"b": "]"}]}, "lmod": "3"}`,
		`{"name": null, "size": null, "hash": null, "lmod": null}`,
		` { } `, `[]`, `null`, `{`, `"x"`, `{"srch": 1}`, `{"name": "\xff", "size": 2, "hash": ["\xfe"]}`,
		`{"name": "x", "size": 2, "hash": [ "a" , "b" ] , "lmod" : -0 }`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		b := []byte(body)
		var fields map[string]json.RawMessage
		jerr := json.Unmarshal(b, &fields)
		var hf hsFields
		got := map[string][]byte{}
		fast := json.Valid(b) && objectFields(b, func(k, v []byte) {
			hf.set(k, v)
			got[string(k)] = v
		})
		if !fast {
			return // the general way reads it, as before
		}
		if jerr != nil || fields == nil {
			t.Fatalf("walked %q, which encoding/json does not take as an object (%v)", body, jerr)
		}
		if len(got) != len(fields) {
			t.Fatalf("%q: members %v, encoding/json %v", body, keys(got), keys(fields))
		}
		for k, v := range fields {
			if !bytes.Equal(got[k], v) {
				t.Fatalf("%q: member %q is %q, encoding/json %q", body, k, got[k], v)
			}
		}
		_, q := fields["q"]
		_, srch := fields["srch"]
		if hf.search != (q || srch) {
			t.Fatalf("%q: search %v, want %v", body, hf.search, q || srch)
		}
		if hf.search {
			return
		}
		want, werr := refHandshakeOf(fields)
		for _, way := range []func(string) []byte{hf.get, func(k string) []byte { return fields[k] }} {
			h, err := handshakeOf(way)
			if fmt.Sprint(err) != fmt.Sprint(werr) {
				t.Fatalf("%q: error %v, want %v", body, err, werr)
			}
			if err != nil {
				continue
			}
			h.Replace, h.Rand, h.Umod, h.Life = "", false, false, 0
			if !reflect.DeepEqual(h, want) {
				t.Fatalf("%q: handshake %+v, want %+v", body, h, want)
			}
		}
	})
}

// FuzzJSONValueReaders: each shortcut reads a valid JSON value exactly as
// encoding/json does, or leaves it to encoding/json.
func FuzzJSONValueReaders(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\"b"`, `"\u00e9"`, `"é"`, `["a","b"]`, `[ ]`, `["a", 1]`, `[null]`,
		`1`, `-0`, `1e400`, `-1.5e-3`, `null`, `true`, `"1"`, `["a" , "b" ]`, "\"\xff\"", `[["a"]]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		b := []byte(raw)
		if !json.Valid(b) || len(bytes.TrimSpace(b)) != len(b) {
			return // a member's raw value has no white space around it
		}
		if s, ok := plainString(b); ok {
			var w string
			if err := json.Unmarshal(b, &w); err != nil || w != s {
				t.Fatalf("plainString(%q) = %q, encoding/json %q (%v)", raw, s, w, err)
			}
		}
		if l, ok := plainStrings(b); ok {
			var w []string
			if err := json.Unmarshal(b, &w); err != nil || !reflect.DeepEqual(w, l) {
				t.Fatalf("plainStrings(%q) = %q, encoding/json %q (%v)", raw, l, w, err)
			}
		}
		var w float64
		werr := json.Unmarshal(b, &w)
		x, ok := jsonFloat(b)
		switch {
		case ok && (werr != nil || math.Float64bits(w) != math.Float64bits(x)):
			t.Fatalf("jsonFloat(%q) = %v, encoding/json %v (%v)", raw, x, w, werr)
		case !ok && werr == nil && string(bytes.TrimSpace(b)) != "null":
			t.Fatalf("jsonFloat(%q) refused what encoding/json reads as %v", raw, w)
		}
	})
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
