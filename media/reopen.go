package media

import (
	"fmt"
	"os"
	"syscall"
)

// reopenByName opens a new file description of f's file (its own
// offset) by f's name (an os.Root's files are named by the root's path
// and theirs), and keeps it only if it is the very same file: a name
// swapped meanwhile (for a link out of the volume, say) is refused
// rather than followed. It is reopen where there is no /proc/self/fd.
func reopenByName(f *os.File) (*os.File, error) {
	want, err := f.Stat()
	if err != nil {
		return nil, err
	}
	g, err := os.OpenFile(f.Name(), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	got, err := g.Stat()
	if err != nil || !os.SameFile(want, got) {
		g.Close()
		if err == nil {
			err = fmt.Errorf("%s: replaced while it was being opened again", f.Name())
		}
		return nil, err
	}
	return g, nil
}
