package http

import (
	"strings"
	"testing"
	"time"

	"hoard/store"
)

// FuzzShareRequest: any POST ?share body is either refused with a 400 or
// gives a valid key, permissions within rwmd, and an expiry after its
// creation (or none).
func FuzzShareRequest(f *testing.F) {
	for _, s := range []string{
		`{"k":"abc","vp":["/music/"],"pw":"","exp":"1440","perms":["read"]}`,
		`{"k":"","vp":"/x.txt","exp":0,"perms":"read"}`,
		`{"k":"a/b","vp":[],"exp":"-1"}`,
		`{"k":"x","exp":"0.01","perms":["read","write","move","delete","read"]}`,
		`{"k":"x","exp":1e308}`, `{"k":"x","exp":"NaN"}`, `{"exp":{}}`, `[]`, `null`, `{"vp":[null]}`, ``,
	} {
		f.Add([]byte(s))
	}
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, body []byte) {
		sh, _, vps, err := parseShareReq(body, now)
		if err != nil {
			if code, _ := statusOf(err); code != 400 {
				t.Fatalf("error %v is not a 400", err)
			}
			return
		}
		if store.CheckShareKey(sh.Key) != nil {
			t.Fatalf("bad key %q accepted", sh.Key)
		}
		if sh.Perms == "" || strings.Trim(sh.Perms, "rwmd") != "" || len(sh.Perms) > 4 {
			t.Fatalf("perms %q", sh.Perms)
		}
		if sh.Expires != 0 && sh.Expires <= sh.Created {
			t.Fatalf("expires %d before created %d", sh.Expires, sh.Created)
		}
		if len(vps) > 1000 {
			t.Fatalf("%d paths", len(vps))
		}
	})
}
