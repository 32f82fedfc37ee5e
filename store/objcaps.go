package store

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"time"
)

// The unfinished up2k uploads of an object-store volume, by client
// address, for the caps every node applies (--reg-cap, --reg-cap-ip):
// the empty object PREFIX/.hist/up2k-ip/<address key>/<wark> says that
// the address has the unfinished upload wark. up2k writes it before the
// session object and deletes it when the file is published; a mark
// without its session (a node died between, or the session expired) is
// swept by the expiry. Counting an address's uploads is one listing of
// its prefix, whatever the bucket holds.

// markArea is where the marks live below the volume's prefix.
const markArea = HistName + "/up2k-ip/"

// markDir is the prefix of the marks of the address key ipkey (URL-safe
// base64: an IPv6 key is a prefix with a "/").
func (v *Volume) markDir(ipkey string) string {
	v, _ = v.Outer() // a share's uploads count for the volume
	return v.objPre + markArea + base64.RawURLEncoding.EncodeToString([]byte(ipkey)) + "/"
}

// UpMark records that the address key ipkey has the unfinished upload
// wark.
func (v *Volume) UpMark(ctx context.Context, ipkey, wark string) error {
	if v.obj == nil || !isHash(wark) {
		return errors.New("store: UpMark: bad wark, or a volume on disk")
	}
	_, err := v.obj.Put(ctx, v.markDir(ipkey)+wark, strings.NewReader(""), ObjectPut{Size: 0})
	return err
}

// UpUnmark removes that record; a missing one is no error.
func (v *Volume) UpUnmark(ctx context.Context, ipkey, wark string) error {
	if v.obj == nil || !isHash(wark) {
		return errors.New("store: UpUnmark: bad wark, or a volume on disk")
	}
	return v.obj.Delete(ctx, v.markDir(ipkey)+wark)
}

// UpCountMarks counts the unfinished uploads recorded for the address key
// ipkey, or for every address when ipkey is "", stopping at max.
func (v *Volume) UpCountMarks(ctx context.Context, ipkey string, max int) (int, error) {
	if v.obj == nil {
		return 0, nil
	}
	o, _ := v.Outer()
	pre := o.objPre + markArea
	if ipkey != "" {
		pre = v.markDir(ipkey)
	}
	n := 0
	err := v.obj.Walk(ctx, pre, func(oi ObjectInfo) error {
		if !isHash(oi.Key[strings.LastIndexByte(oi.Key, '/')+1:]) {
			return nil // not hoard's
		}
		if n++; n >= max {
			return errStop
		}
		return nil
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return n, err
}

// UpSweepMarks deletes the marks older than before whose upload keep
// says is no longer unfinished; it returns how many it deleted.
func (v *Volume) UpSweepMarks(ctx context.Context, before time.Time, keep func(wark string) bool) (int, error) {
	if v.obj == nil {
		return 0, nil
	}
	o, _ := v.Outer()
	return v.sweepKeys(ctx, o.objPre+markArea, func(oi ObjectInfo) bool {
		w := oi.Key[strings.LastIndexByte(oi.Key, '/')+1:]
		return oi.ModTime.Before(before) && (!isHash(w) || !keep(w))
	})
}

// UpMarks calls fn with the uploads marked for the address key ipkey,
// each with when it was marked, at most max of them.
func (v *Volume) UpMarks(ctx context.Context, ipkey string, max int, fn func(wark string, at time.Time)) error {
	if v.obj == nil {
		return nil
	}
	n := 0
	err := v.obj.Walk(ctx, v.markDir(ipkey), func(oi ObjectInfo) error {
		w := oi.Key[strings.LastIndexByte(oi.Key, '/')+1:]
		if !isHash(w) {
			return nil
		}
		fn(w, oi.ModTime)
		if n++; n >= max {
			return errStop
		}
		return nil
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return err
}
