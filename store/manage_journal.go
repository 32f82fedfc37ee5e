package store

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// A copy published under a hidden name first, and a move across file
// systems, are journalled: one small record in the destination volume's
// state folder (<hist>/ops/), written durably before the first byte is
// copied and updated once the destination is whole. The next start reads
// what a crash left: a record still "staging" means the hidden copy is
// removed (the source was never touched); "published" means the
// destination is whole and the move is finished by deleting the source.

const (
	phaseStaging   = "staging"
	phasePublished = "published"
)

// opRecord is one journalled operation.
type opRecord struct {
	Op     string `json:"op"`      // "move" or "copy"
	SrcVol string `json:"src_vol"` // the source volume's folder (Volume.Src)
	Src    string `json:"src"`     // canonical path in the source volume
	DstVol string `json:"dst_vol"`
	DstDir string `json:"dst_dir"` // canonical folder of the destination ("" for the top)
	Stage  string `json:"stage"`   // hidden work name in DstDir
	Name   string `json:"name"`    // final name in DstDir
	Tree   bool   `json:"tree"`
	Phase  string `json:"phase"`
	file   string
}

func opsDir(v *Volume) string { return filepath.Join(v.hist, "ops") }

// save writes the record durably (temp file, fsync, rename, folder fsync).
func (r *opRecord) save(v *Volume) error {
	dir := opsDir(v)
	if r.file == "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		r.file = filepath.Join(dir, strings.TrimSuffix(strings.TrimPrefix(r.Stage, stagePrefix), PartialSuffix)+".json")
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return writeFileAtomic(r.file, b)
}

// drop removes the record, durably.
func (r *opRecord) drop() {
	if r.file == "" {
		return
	}
	if os.Remove(r.file) == nil {
		syncDir(filepath.Dir(r.file))
	}
}

// valid checks a record read back from disk before anything acts on it:
// a damaged one must never make the start-up delete something else.
func (r *opRecord) valid() bool {
	if r.Op != "move" && r.Op != "copy" || r.Phase != phaseStaging && r.Phase != phasePublished {
		return false
	}
	if !strings.HasPrefix(r.Stage, stagePrefix) || !strings.HasSuffix(r.Stage, PartialSuffix) || checkName(r.Stage) != nil {
		return false
	}
	if checkName(r.Name) != nil || strings.HasSuffix(r.Name, PartialSuffix) || strings.EqualFold(r.Name, HistName) {
		return false
	}
	if _, err := cleanRel(r.DstDir); err != nil {
		return false
	}
	if r.Phase == phasePublished {
		if r.Op != "move" {
			return false
		}
		if s, err := cleanRel(r.Src); err != nil || s == "." {
			return false
		}
	}
	return true
}

// recoverOps finishes or undoes what a crash interrupted in vols (all
// are every volume mounted). It runs at Open, and for the volumes a
// reload adds, before they are served.
func (s *Store) recoverOps(vols, all []*Volume) {
	for _, v := range vols {
		if v.hist == "" {
			continue
		}
		dir := opsDir(v)
		des, err := readStateDir(dir)
		if err != nil {
			continue
		}
		for _, de := range des {
			name := filepath.Join(dir, de.Name())
			switch {
			case strings.HasPrefix(de.Name(), ".tmp-"):
				os.Remove(name) // a record never written whole
			case strings.HasSuffix(de.Name(), ".json"):
				s.recoverOp(v, name, all)
			}
		}
	}
}

func volBySrc(all []*Volume, src string) *Volume {
	for _, v := range all {
		if v.Src == src {
			return v
		}
	}
	return nil
}

func (s *Store) recoverOp(v *Volume, file string, all []*Volume) {
	log := s.log.With("journal", file)
	b, err := readStateFile(file, 1<<20)
	if err != nil {
		log.Warn("cannot read an interrupted operation's record", "err", err)
		return
	}
	r := &opRecord{file: file}
	if json.Unmarshal(b, r) != nil || !r.valid() {
		log.Warn("dropping a damaged record of an interrupted operation")
		r.drop()
		return
	}
	if r.DstVol != v.Src {
		log.Warn("an interrupted operation's record names another folder for this volume (the configuration changed?); leaving it", "dst_vol", r.DstVol, "volume", v.Src)
		return
	}
	de, err := v.openEnd(dotIfEmpty(r.DstDir), r.Name)
	if err != nil {
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrNotDir) {
			r.drop() // the folder is gone, and the hidden copy with it
			return
		}
		log.Warn("cannot open the destination of an interrupted operation; will try again at the next start", "volume", "/"+v.VPath, "err", err)
		return
	}
	defer de.close()
	ctx := context.Background()
	switch r.Phase {
	case phaseStaging:
		var ts treeStats
		var err error
		if st, lerr := lstatAt(de.dir, r.Stage); lerr == nil {
			if isDirStat(&st) {
				err = removeTree(ctx, de.dir, r.Stage, &ts)
			} else {
				err = unlinkAt(de.dir, r.Stage, false)
				ts.Files = 1
			}
		}
		if err != nil {
			log.Warn("cannot remove the half-made copy of an interrupted operation; will try again at the next start", "err", err)
			return
		}
		v.syncDir(dotIfEmpty(r.DstDir))
		log.Info("removed the half-made destination of an interrupted "+r.Op, "volume", "/"+v.VPath, "path", joinRel(r.DstDir, r.Name), "files", ts.Files)
	case phasePublished:
		sv := volBySrc(all, r.SrcVol)
		if sv == nil {
			log.Warn("the source volume of an interrupted move is no longer mounted; its source stays, the destination is complete", "src_vol", r.SrcVol)
			return
		}
		if _, err := lstatAt(de.dir, r.Name); err != nil {
			log.Warn("the destination of an interrupted move is gone; keeping the source", "err", err)
			break
		}
		se, err := sv.openEnd(splitRel(r.Src))
		if err != nil {
			break // the source folder is gone already
		}
		kept, err := removeMoved(ctx, se.dir, se.name, de.dir, r.Name)
		sv.syncDir(dotIfEmpty(se.dirRel))
		se.close()
		if err != nil {
			log.Warn("cannot finish deleting the source of an interrupted move; will try again at the next start", "err", err)
			return
		}
		log.Info("finished an interrupted move", "from", Loc{sv, r.Src}.URLPath(), "to", Loc{v, joinRel(r.DstDir, r.Name)}.URLPath(), "kept", kept)
	}
	r.drop()
}

type mvFrame struct {
	src, dst *os.File // dst nil: not in the destination; keep everything
	name     string
	ents     []fs.DirEntry
	i        int
}

// removeMoved deletes the source sname in sparent of a move whose copy
// dname in dparent is published: each file, link and folder that the
// destination holds identically (same size and mtime, same link text) and
// the work files of uploads in progress (*.PARTIAL). What differs (it
// changed or appeared while the tree was copied), and special files,
// stay, and are counted in kept. Memory is bounded by the depth.
func removeMoved(ctx context.Context, sparent *os.File, sname string, dparent *os.File, dname string) (kept int64, err error) {
	st, err := lstatAt(sparent, sname)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if !isDirStat(&st) {
		if !sameEntry(sparent, sname, dparent, dname) {
			return 1, nil
		}
		if err := unlinkAt(sparent, sname, false); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, err
		}
		return 0, hook("rm-file")
	}
	sd, err := openDirAt(sparent, sname)
	if err != nil {
		return 0, err
	}
	dd, _ := openDirAt(dparent, dname)
	stack := []*mvFrame{{src: sd, dst: dd, name: sname}}
	defer func() {
		for _, f := range stack {
			f.src.Close()
			if f.dst != nil {
				f.dst.Close()
			}
		}
	}()
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return kept, err
		}
		top := stack[len(stack)-1]
		if top.i == len(top.ents) {
			ents, rerr := nextBatch(top.src, top.ents)
			if rerr != nil {
				return kept, rerr
			}
			if len(ents) > 0 {
				top.ents, top.i = ents, 0
				continue
			}
			top.src.Close()
			if top.dst != nil {
				top.dst.Close()
			}
			stack = stack[:len(stack)-1]
			up := sparent
			if len(stack) > 0 {
				up = stack[len(stack)-1].src
			}
			err := unlinkAt(up, top.name, true)
			if err != nil && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) && !errors.Is(err, fs.ErrNotExist) {
				return kept, err
			}
			continue
		}
		e := top.ents[top.i]
		top.i++
		name := e.Name()
		switch {
		case strings.HasSuffix(name, PartialSuffix) && !e.Type().IsDir():
			// An upload in progress in the moved folder: it is dropped.
		case e.Type().IsDir():
			sub, err := openDirAt(top.src, name)
			if err != nil {
				kept++
				continue
			}
			var dsub *os.File
			if top.dst != nil {
				dsub, _ = openDirAt(top.dst, name)
			}
			if dsub == nil {
				kept++ // not in the destination (or another copy's hidden work folder): keep it whole
				sub.Close()
				continue
			}
			stack = append(stack, &mvFrame{src: sub, dst: dsub, name: name})
			continue
		case top.dst == nil || !sameEntry(top.src, name, top.dst, name):
			kept++
			continue
		}
		if err := unlinkAt(top.src, name, false); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return kept, err
		}
		if err := hook("rm-file"); err != nil {
			return kept, err
		}
	}
	return kept, nil
}

// sameEntry reports whether name in sdir and dname in ddir are the same
// regular file (size and mtime; the copy kept the mtime) or the same link.
func sameEntry(sdir *os.File, name string, ddir *os.File, dname string) bool {
	s, err := lstatAt(sdir, name)
	if err != nil {
		return false
	}
	d, err := lstatAt(ddir, dname)
	if err != nil {
		return false
	}
	switch {
	case isRegStat(&s) && isRegStat(&d):
		return s.Size == d.Size && sameMtime(&s, &d)
	case isLinkStat(&s) && isLinkStat(&d):
		a, err1 := readlinkAt(sdir, name)
		b, err2 := readlinkAt(ddir, dname)
		return err1 == nil && err2 == nil && a == b
	}
	return false
}

// sameMtime compares mtimes, allowing a destination file system that keeps
// whole seconds only.
func sameMtime(s, d *unix.Stat_t) bool {
	return s.Mtim.Sec == d.Mtim.Sec && (s.Mtim.Nsec == d.Mtim.Nsec || d.Mtim.Nsec == 0)
}
