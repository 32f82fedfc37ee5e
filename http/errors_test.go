package http

import (
	"fmt"
	"net/http"
	"testing"

	"hoard/store"
)

// TestStatusOfOpError maps each kind of refused file-management operation
// to its status, with the store's client-safe message.
func TestStatusOfOpError(t *testing.T) {
	for k, want := range map[store.Kind]int{
		store.KindInvalid: 400, store.KindNotFound: 404, store.KindForbidden: 403, store.KindExists: 409, store.KindConflict: 409,
	} {
		err := fmt.Errorf("wrapped: %w", &store.OpError{Op: "move", Kind: k, Msg: "the message", Err: fmt.Errorf("/srv/secret/path: boom")})
		code, msg := statusOf(err)
		if code != want || msg != "the message" {
			t.Errorf("%v: %d %q, want %d", k, code, msg, want)
		}
	}
	if code, _ := statusOf(&store.OpError{Op: "copy", Kind: store.KindConflict, Err: &store.DiskFullError{Free: 1, Need: 2}}); code != http.StatusInternalServerError {
		t.Errorf("disk full inside an OpError: %d", code)
	}
}
