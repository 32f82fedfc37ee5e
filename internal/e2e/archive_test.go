package e2e

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/text/encoding/charmap"
)

// archiveTestFiles is the test tree: names with non-ASCII characters, a name over
// 100 bytes, an empty file, files past the sendfile threshold, nested
// folders.
var archiveTestFiles = map[string][]byte{
	"a.txt":                  []byte("hello\n"),
	"empty":                  {},
	"sub/ünïcødé ½ café.txt": []byte("ü"),
	"sub/日本語 ファイル.txt":       []byte("nihongo"),
	"sub/big.bin":            xorshiftBytes(300_000, 1),
	"sub/deeper/x/y/w.dat":   xorshiftBytes(70_000, 2),
	strings.Repeat("Ünïcode-folder ", 6) + "/" + strings.Repeat("ä", 60) + ".txt": []byte("long"),
}

func xorshiftBytes(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed) * 2654435761
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

func writeTree(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, data := range files {
		writeFile(t, dir, name, data)
	}
}

// readTree reads every file below dir: path → content.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.ToSlash(rel)] = b
		return nil
	})
	return out
}

// extractWithTool extracts the archive file with a system tool into a new folder
// and returns that folder.
func extractWithTool(t *testing.T, archive string, name ...string) string {
	t.Helper()
	dst := t.TempDir()
	var args []string
	for _, a := range name[1:] {
		args = append(args, strings.NewReplacer("ARCHIVE", archive, "DST", dst).Replace(a))
	}
	cmd := exec.Command(name[0], args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "PYTHONUTF8=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return dst
}

func TestArchiveEveryFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTree(t, dir, archiveTestFiles)
	s := start(t, "-v", dir+":music/My Songs:r")
	var formats []string
	formats = append(formats, "tar", "tar=pax", "zip", "zip=utf8", "zip=dos", "zip=crc")
	levels := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	if testing.Short() {
		levels = []int{0, 1, 9} // the edges; every codec and form still runs
	}
	for _, l := range levels {
		formats = append(formats, fmt.Sprintf("tar=gz:%d", l), fmt.Sprintf("tar=xz:%d", l))
		if l > 0 {
			formats = append(formats, fmt.Sprintf("tar=bz2:%d", l))
		}
	}
	formats = append(formats, "tar=gz", "tar=xz", "tar=bz2", "tar=pax,gz", "tar=pax,xz:2")
	for _, format := range formats {
		resp, body := s.do(t, "GET", "/music/My%20Songs/?"+format, nil)
		wantStatus(t, resp, body, 200)
		ext := "tar"
		ct := "application/x-tar"
		switch {
		case strings.HasPrefix(format, "zip"):
			ext, ct = "zip", "application/zip"
		case strings.Contains(format, "gz"):
			ext, ct = "tar.gz", "application/gzip"
		case strings.Contains(format, "xz"):
			ext, ct = "tar.xz", "application/x-xz"
		case strings.Contains(format, "bz2"):
			ext, ct = "tar.bz2", "application/x-bzip"
		}
		if got := resp.Header.Get("Content-Type"); got != ct {
			t.Errorf("%s: Content-Type %q, want %q", format, got, ct)
		}
		if got, want := resp.Header.Get("Content-Disposition"), `attachment; filename="My Songs.`+ext+`"; filename*=UTF-8''My%20Songs.`+ext; got != want {
			t.Errorf("%s: Content-Disposition %q, want %q", format, got, want)
		}
		if (ext == "tar" || ext == "zip") != (resp.ContentLength == int64(len(body))) {
			t.Errorf("%s: Content-Length %d for %d bytes (uncompressed archives announce theirs)", format, resp.ContentLength, len(body))
		}
		wantArchiveFiles(t, format, readArchive(t, format, body), "My Songs/", archiveTestFiles)
	}
}

// TestArchiveSystemTools extracts each variant with tar, bsdtar, unzip
// and Python, and compares the files with the originals.
func TestArchiveSystemTools(t *testing.T) {
	if testing.Short() {
		t.Skip("runs tar, bsdtar, unzip and Python on every variant (slow; -short); TestArchiveEveryFormat reads them with Go")
	}
	t.Parallel()
	dir := t.TempDir()
	writeTree(t, dir, archiveTestFiles)
	s := start(t, "-v", dir+"::r")
	save := func(format string) string {
		resp, body := s.do(t, "GET", "/?"+format, nil)
		wantStatus(t, resp, body, 200)
		p := filepath.Join(t.TempDir(), "a")
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tars := []string{"tar", "tar=pax", "tar=gz", "tar=xz", "tar=bz2", "tar=pax,gz:9", "tar=xz:6", "tar=bz2:9"}
	for _, format := range tars {
		a := save(format)
		for _, tool := range [][]string{
			{"tar", "-xf", "ARCHIVE", "-C", "DST"},
			{"bsdtar", "-xf", "ARCHIVE", "-C", "DST"},
		} {
			wantArchiveFiles(t, format+" "+tool[0], readTree(t, extractWithTool(t, a, tool...)), "top/", archiveTestFiles)
		}
		if format == "tar" || format == "tar=pax" || format == "tar=gz" || format == "tar=xz" || format == "tar=bz2" {
			got := readTree(t, extractWithTool(t, a, "python3", "-m", "tarfile", "-e", "ARCHIVE", "DST"))
			wantArchiveFiles(t, format+" python3 tarfile", got, "top/", archiveTestFiles)
		}
	}
	for _, format := range []string{"zip", "zip=dos", "zip=crc"} {
		a := save(format)
		bsd := []string{"bsdtar", "-xf", "ARCHIVE", "-C", "DST"}
		if format != "zip" {
			// libarchive reads names without flag bit 11 in the
			// locale's charset unless told they are CP437.
			bsd = append(bsd, "--options", "hdrcharset=CP437")
		}
		wantArchiveFiles(t, format+" bsdtar", readTree(t, extractWithTool(t, a, bsd...)), "top/", archiveTestFiles)
		wantArchiveFiles(t, format+" python3 zipfile", readTree(t, extractWithTool(t, a, "python3", "-m", "zipfile", "-e", "ARCHIVE", "DST")), "top/", archiveTestFiles)
		if format == "zip" {
			// unzip decodes names by flag bit 11; CP437 names are
			// shown per locale, so only the UTF-8 variant's names are
			// compared, and the others are tested for integrity.
			wantArchiveFiles(t, format+" unzip", readTree(t, extractWithTool(t, a, "unzip", "-q", "ARCHIVE", "-d", "DST")), "top/", archiveTestFiles)
		}
		if out, err := exec.Command("unzip", "-tq", a).CombinedOutput(); err != nil {
			t.Errorf("%s: unzip -t: %v\n%s", format, err, out)
		}
	}
}

// TestArchiveCP437Names: dos and crc store names CP437 can hold in CP437
// without flag bit 11, and the others in UTF-8 with the flag; every name
// reads back.
func TestArchiveCP437Names(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string][]byte{"café ½ ÿ Äß.txt": []byte("cp437"), "日本.txt": []byte("utf8"), "plain.txt": []byte("ascii")}
	writeTree(t, dir, files)
	s := start(t, "-v", dir+"::r")
	for _, format := range []string{"zip=dos", "zip=crc", "zip"} {
		resp, body := s.do(t, "GET", "/?"+format, nil)
		wantStatus(t, resp, body, 200)
		zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
		if err != nil {
			t.Fatal(err)
		}
		for _, zf := range zr.File {
			utf8 := zf.Flags&0x800 != 0
			wantUTF8 := format == "zip" || strings.Contains(zf.Name, "日本")
			if utf8 != wantUTF8 {
				t.Errorf("%s: %q: UTF-8 flag %v, want %v", format, zf.Name, utf8, wantUTF8)
			}
		}
		wantArchiveFiles(t, format, readArchive(t, format, body), "top/", files)
		if format == "zip=dos" {
			raw, _ := charmap.CodePage437.NewEncoder().Bytes([]byte("top/café ½ ÿ Äß.txt"))
			if !bytes.Contains(body, raw) || !bytes.Equal(raw[4:9], []byte{'c', 'a', 'f', 0x82, ' '}) {
				t.Errorf("zip=dos: the CP437 bytes %x of the name are not in the archive", raw)
			}
		}
	}
}

// zipLocal is a local file header as it lies in the archive.
type zipLocal struct {
	sig, crc, csize, usize uint32
	need, flags, method    uint16
	nameLen, extraLen      uint16
	name                   []byte
	dataOff                int
}

func parseLocal(t *testing.T, b []byte, off int) zipLocal {
	t.Helper()
	if off+30 > len(b) {
		t.Fatalf("local header at %d past the end (%d)", off, len(b))
	}
	le := binary.LittleEndian
	h := zipLocal{
		sig: le.Uint32(b[off:]), need: le.Uint16(b[off+4:]), flags: le.Uint16(b[off+6:]), method: le.Uint16(b[off+8:]),
		crc: le.Uint32(b[off+14:]), csize: le.Uint32(b[off+18:]), usize: le.Uint32(b[off+22:]),
		nameLen: le.Uint16(b[off+26:]), extraLen: le.Uint16(b[off+28:]),
	}
	h.name = b[off+30 : off+30+int(h.nameLen)]
	h.dataOff = off + 30 + int(h.nameLen) + int(h.extraLen)
	return h
}

// TestArchiveZipHeadersByteByByte walks the local headers of zip=crc (CRC
// and sizes up front, no data descriptor) and of the default zip (flag bit
// 3 and a descriptor after each body).
func TestArchiveZipHeadersByteByByte(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string][]byte{"a.txt": []byte("alpha"), "b é.bin": xorshiftBytes(100_000, 9), "c": {}}
	writeTree(t, dir, files)
	s := start(t, "-v", dir+"::r")
	order := []string{"a.txt", "b é.bin", "c"}
	for _, format := range []string{"zip=crc", "zip"} {
		resp, b := s.do(t, "GET", "/?"+format, nil)
		wantStatus(t, resp, b, 200)
		off := 0
		for _, name := range order {
			data := files[name]
			h := parseLocal(t, b, off)
			wantName := []byte("top/" + name)
			var wantFlags uint16 = 0x0800
			if format == "zip=crc" {
				wantName, _ = charmap.CodePage437.NewEncoder().Bytes(wantName)
				wantFlags = 0
			} else {
				wantFlags |= 0x0008
			}
			sum := crc32.ChecksumIEEE(data)
			wantCRC := sum
			if format == "zip" {
				wantCRC = 0
			}
			if h.sig != 0x04034b50 || h.need != 10 || h.flags != wantFlags || h.method != 0 ||
				h.crc != wantCRC || h.csize != uint32(len(data)) || h.usize != uint32(len(data)) || !bytes.Equal(h.name, wantName) {
				t.Fatalf("%s: %s: local header %+v; want sig 04034b50, version 10, flags %#x, stored, crc %08x, sizes %d, name %x",
					format, name, h, wantFlags, wantCRC, len(data), wantName)
			}
			if !bytes.Equal(b[h.dataOff:h.dataOff+len(data)], data) {
				t.Fatalf("%s: %s: the body does not follow its header", format, name)
			}
			off = h.dataOff + len(data)
			if format == "zip" {
				le := binary.LittleEndian
				if le.Uint32(b[off:]) != 0x08074b50 || le.Uint32(b[off+4:]) != sum || le.Uint32(b[off+8:]) != uint32(len(data)) || le.Uint32(b[off+12:]) != uint32(len(data)) {
					t.Fatalf("zip: %s: data descriptor %x, want crc %08x and sizes %d", name, b[off:off+16], sum, len(data))
				}
				off += 16
			}
		}
		if sig := binary.LittleEndian.Uint32(b[off:]); sig != 0x02014b50 {
			t.Fatalf("%s: after the last body comes %08x, want the central directory", format, sig)
		}
	}
}

// TestArchiveZip64 archives a sparse file past 4 GiB: zip64 extra fields
// and end records, read back whole (CRC checked) by Go and listed by unzip
// and Python.
func TestArchiveZip64(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("moves 4 GiB")
	}
	dir := t.TempDir()
	const size = 4<<30 + 4097
	f, err := os.Create(filepath.Join(dir, "huge.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Skipf("no sparse files: %v", err)
	}
	f.WriteAt([]byte("end"), size-3)
	f.Close()
	writeFile(t, dir, "small.txt", []byte("after the big one"))
	s := start(t, "-v", dir+"::r")
	// 4 GiB through loopback and onto disk: allow for a loaded machine.
	slow := &http.Client{Timeout: 10 * time.Minute}
	resp, err := slow.Get(s.URL + "/?zip")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := filepath.Join(t.TempDir(), "a.zip")
	of, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(of, resp.Body)
	of.Close()
	if err != nil || resp.StatusCode != 200 || n != resp.ContentLength {
		t.Fatalf("GET ?zip: %d, %d of %d bytes, %v", resp.StatusCode, n, resp.ContentLength, err)
	}
	zr, err := zip.OpenReader(out)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if len(zr.File) != 2 || zr.File[0].UncompressedSize64 != size || zr.File[1].Name != "top/small.txt" {
		t.Fatalf("entries %+v", zr.File)
	}
	for _, zf := range zr.File {
		rc, err := zf.Open()
		if err != nil {
			t.Fatal(err)
		}
		if n, err := io.Copy(io.Discard, rc); err != nil || uint64(n) != zf.UncompressedSize64 {
			t.Fatalf("%s: read %d, %v", zf.Name, n, err)
		}
	}
	for _, cmd := range [][]string{{"unzip", "-l", out}, {"python3", "-m", "zipfile", "-l", out}} {
		o, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput()
		if err != nil || !strings.Contains(string(o), "4294971393") && !strings.Contains(string(o), "huge.bin") {
			t.Errorf("%s: %v\n%s", cmd, err, o)
		}
	}
	if o, err := exec.Command("unzip", "-l", out).CombinedOutput(); err != nil || !strings.Contains(string(o), "4294971393") {
		t.Errorf("unzip -l does not show the size 4294971393: %v\n%s", err, o)
	}
}

func archiveForm(t *testing.T, fields ...string) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for i := 0; i+1 < len(fields); i += 2 {
		mw.WriteField(fields[i], fields[i+1])
	}
	mw.Close()
	return b.Bytes(), "Content-Type: " + mw.FormDataContentType()
}

func TestArchiveSelection(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTree(t, dir, archiveTestFiles)
	writeFile(t, dir, "sub/.dot", []byte("dot"))
	s := start(t, "-v", dir+":v:r")
	want := map[string][]byte{"a.txt": archiveTestFiles["a.txt"]}
	for name, data := range archiveTestFiles {
		if strings.HasPrefix(name, "sub/") {
			want[name] = data
		}
	}
	sel, _ := json.Marshal([]string{"a.txt", "sub", "sub/big.bin", "a.txt"})
	for _, format := range []string{"tar", "zip", "tar=gz", "zip=crc"} {
		resp, body := s.do(t, "POST", "/v/?"+format, sel, "Content-Type: application/json")
		wantStatus(t, resp, body, 200)
		wantArchiveFiles(t, "JSON "+format, readArchive(t, format, body), "", want)
		if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, `attachment; filename="sel-v.`) {
			t.Errorf("Content-Disposition %q", cd)
		}
		// copyparty's form: act=zip first, then files, one URL-quoted
		// name a line.
		form, ct := archiveForm(t, "act", "zip", "files", "a.txt\r\n%73ub\n")
		resp, body = s.do(t, "POST", "/v/?"+format, form, ct)
		wantStatus(t, resp, body, 200)
		wantArchiveFiles(t, "form "+format, readArchive(t, format, body), "", want)
	}
	// one file with a non-ASCII name, quoted in the form
	form, ct := archiveForm(t, "act", "zip", "files", "sub/%C3%BCn%C3%AFc%C3%B8d%C3%A9%20%C2%BD%20caf%C3%A9.txt")
	resp, body := s.do(t, "POST", "/v/?tar", form, ct)
	wantStatus(t, resp, body, 200)
	wantArchiveFiles(t, "form non-ASCII", readArchive(t, "tar", body), "", map[string][]byte{"sub/ünïcødé ½ café.txt": []byte("ü")})
	// a subfolder's selection
	sel, _ = json.Marshal([]string{"deeper"})
	resp, body = s.do(t, "POST", "/v/sub/?zip", sel, "Content-Type: application/json")
	wantStatus(t, resp, body, 200)
	wantArchiveFiles(t, "subfolder", readArchive(t, "zip", body), "", map[string][]byte{"deeper/x/y/w.dat": archiveTestFiles["sub/deeper/x/y/w.dat"]})
}

// startAs runs hoard as another user (the tests run as root, which reads
// every file, so "unreadable" needs a server that is not root).
func startAs(t *testing.T, uid int, args ...string) *server {
	t.Helper()
	// the shared binary lies in a folder only root may enter
	bin := filepath.Join(t.TempDir(), "hoard")
	b, err := os.ReadFile(binPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := filepath.Dir(bin); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	// The copy was just written: a process another parallel test forks
	// meanwhile holds its write descriptor until it execs, and exec of
	// the copy fails with ETXTBSY (golang/go#22315) until then. Try again.
	var (
		cmd *exec.Cmd
		s   *server
		out io.ReadCloser
	)
	for try := 0; ; try++ {
		cmd = exec.Command(bin, append([]string{"-p", "0", "-i", "127.0.0.1"}, args...)...)
		cmd.Dir = "/"
		cmd.SysProcAttr = runAsUser(uid)
		s = &server{cmd: cmd, logs: &syncBuf{}, done: make(chan error, 1)}
		cmd.Stderr = s.logs
		if out, err = cmd.StdoutPipe(); err != nil {
			t.Fatal(err)
		}
		err = cmd.Start()
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.ETXTBSY) || try == 50 {
			t.Fatal(err)
		}
		out.Close()
		time.Sleep(20 * time.Millisecond)
	}
	go func() { s.done <- cmd.Wait() }()
	line := make([]byte, 200)
	n, _ := io.ReadAtLeast(out, line, 1)
	m := listenRE.FindSubmatch(line[:n])
	if m == nil {
		s.stop()
		t.Fatalf("hoard as uid %d did not start: %q\n%s", uid, line[:n], s.logs)
	}
	go io.Copy(io.Discard, out)
	s.URL = strings.TrimSuffix(string(m[1]), "/")
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("hoard did not stop cleanly: %v\nlog:\n%s", err, s.logs)
		}
	})
	return s
}

func runAsUser(uid int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
}

func TestArchiveBadSelection(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTree(t, dir, archiveTestFiles)
	writeFile(t, dir, ".secret", []byte("dot"))
	writeFile(t, dir, "up2k.db", []byte("db"))
	writeFile(t, dir, "dir.txt", []byte("d"))
	writeFile(t, dir, "x.PARTIAL", []byte("p"))
	os.Symlink("/etc", filepath.Join(dir, "out"))
	os.Symlink("/etc/hostname", filepath.Join(dir, "outfile"))
	s := start(t, "-v", dir+"::r", "-v", t.TempDir()+":w:w")
	before := tree(t, dir)
	huge, _ := json.Marshal([]string{strings.Repeat("a", 1<<20)})
	jsonCases := []struct {
		body string
		code int
	}{
		{body: `["../etc/passwd"]`, code: 400},
		{body: `["/etc/passwd"]`, code: 400},
		{body: `["sub/../../x"]`, code: 400},
		{body: `["sub/./big.bin"]`, code: 400},
		{body: `["a.txt", "missing"]`, code: 400},
		{body: `["out"]`, code: 400},
		{body: `["outfile"]`, code: 400},
		{body: `["up2k.db"]`, code: 403},
		{body: `["dir.txt"]`, code: 403},
		{body: `["x.PARTIAL"]`, code: 403},
		{body: `[".hist"]`, code: 403},
		{body: `[".secret"]`, code: 403}, // no dot permission
		{body: `[""]`, code: 400},
		{body: `[]`, code: 400},
		{body: `{"a": 1}`, code: 400},
		{body: `[1, 2]`, code: 400},
		{body: `["a.txt", null]`, code: 400},
		{body: `"a.txt"`, code: 400},
		{body: `null`, code: 400},
		{body: `not json`, code: 400},
		{body: `["a\u0000b"]`, code: 400},
		{body: string(huge), code: 413},
	}
	for _, tc := range jsonCases {
		for _, format := range []string{"tar", "zip"} {
			resp, body := s.do(t, "POST", "/?"+format, []byte(tc.body), "Content-Type: application/json")
			if resp.StatusCode != tc.code || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
				t.Errorf("%s %.60s: %d %s %q, want %d and no archive", format, tc.body, resp.StatusCode, resp.Header.Get("Content-Type"), body, tc.code)
			}
		}
	}
	formCases := []struct {
		fields []string
		code   int
	}{
		{fields: []string{"files", "a.txt"}, code: 400},                    // act=zip must come first
		{fields: []string{"act", "bput", "files", "a.txt"}, code: 400},     // wrong action
		{fields: []string{"act", "zip"}, code: 400},                        // no files
		{fields: []string{"act", "zip", "files", "\n\n"}, code: 400},       // empty list
		{fields: []string{"act", "zip", "files", "%2e%2e/x"}, code: 400},   // quoted traversal
		{fields: []string{"act", "zip", "files", "a.txt\n%zz"}, code: 400}, // bad quoting
		{fields: []string{"act", "zip", "files", "up2k.db"}, code: 403},
	}
	for _, tc := range formCases {
		form, ct := archiveForm(t, tc.fields...)
		resp, body := s.do(t, "POST", "/?zip", form, ct)
		if resp.StatusCode != tc.code {
			t.Errorf("form %q: %d %q, want %d", tc.fields, resp.StatusCode, body, tc.code)
		}
	}
	// write-only: no archive, whatever the selection
	resp, body := s.do(t, "POST", "/w/?tar", []byte(`["x"]`), "Content-Type: application/json")
	wantStatus(t, resp, body, 401)
	if after := tree(t, dir); !slices.Equal(before, after) {
		t.Errorf("refused selections changed the folder: %v → %v", before, after)
	}
}

// TestArchiveUnreadable runs the server as nobody: an unreadable selected
// file or folder is 403 before any byte; in a whole-folder archive the
// unreadable file is skipped and named in archive-errors-*.txt.
func TestArchiveUnreadable(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("needs root to start the server as another user")
	}
	dir, err := os.MkdirTemp("", "hoard-arch-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	writeFile(t, dir, "ok.txt", []byte("fine"))
	writeFile(t, dir, "locked.txt", []byte("secret"))
	writeFile(t, dir, "shut/inner.txt", []byte("inner"))
	os.Chmod(filepath.Join(dir, "locked.txt"), 0o600)
	os.Chmod(filepath.Join(dir, "shut"), 0o700)
	hist, err := os.MkdirTemp("", "hoard-arch-hist-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(hist) })
	os.Chown(hist, 65534, 65534)
	s := startAs(t, 65534, "-v", dir+"::r", "--hist", hist)
	for _, sel := range []string{`["ok.txt", "locked.txt"]`, `["shut"]`} {
		resp, body := s.do(t, "POST", "/?tar", []byte(sel), "Content-Type: application/json")
		if resp.StatusCode != 403 || resp.Header.Get("Content-Type") == "application/x-tar" {
			t.Errorf("%s: %d %q, want 403 and no archive", sel, resp.StatusCode, body)
		}
	}
	resp, body := s.do(t, "GET", "/?tar", nil)
	wantStatus(t, resp, body, 200)
	got := readArchive(t, "tar", body)
	if string(got["top/ok.txt"]) != "fine" || len(got) != 2 {
		t.Fatalf("entries %v", got)
	}
	for name, data := range got {
		if name != "top/ok.txt" && (!strings.HasPrefix(name, "top/archive-errors-") || !strings.Contains(string(data), "locked.txt") || !strings.Contains(string(data), "shut")) {
			t.Errorf("%s: %q", name, data)
		}
	}
}

func TestArchiveRules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string][]byte{
		"keep.txt": []byte("k"), "sub/keep2.txt": []byte("k2"),
		".dotfile": []byte("d"), ".dotdir/in.txt": []byte("di"), "sub/.inner": []byte("i"),
		"up2k.db": []byte("x"), "sub/dir.txt": []byte("x"), "x.PARTIAL": []byte("x"), ".hoard-abc.PARTIAL": []byte("x"),
		".hist/th/thumb.jpg": []byte("x"),
	}
	writeTree(t, dir, files)
	os.Symlink("/etc", filepath.Join(dir, "etc-link"))
	os.Symlink("/etc/passwd", filepath.Join(dir, "passwd-link"))
	os.Symlink("..", filepath.Join(dir, "sub", "loop"))
	os.Symlink("keep.txt", filepath.Join(dir, "inside-link"))
	s := start(t, "-a", "u:pw", "-a", "d:pw2", "-v", dir+"::r:r.,d", "-v", t.TempDir()+":wo:w")
	plain := map[string][]byte{"keep.txt": []byte("k"), "sub/keep2.txt": []byte("k2"), "inside-link": []byte("k")}
	dots := map[string][]byte{".dotfile": []byte("d"), ".dotdir/in.txt": []byte("di"), "sub/.inner": []byte("i")}
	for k, v := range plain {
		dots[k] = v
	}
	for _, format := range []string{"tar", "zip"} {
		resp, body := s.do(t, "GET", "/?"+format, nil)
		wantStatus(t, resp, body, 200)
		wantArchiveFiles(t, format+" without dot permission", readArchive(t, format, body), "top/", plain)
		resp, body = s.do(t, "GET", "/?"+format, nil, basicAuth("d:pw2"))
		wantStatus(t, resp, body, 200)
		wantArchiveFiles(t, format+" with dot permission", readArchive(t, format, body), "top/", dots)
		resp, body = s.do(t, "GET", "/?"+format+"&nodot", nil, basicAuth("d:pw2"))
		wantStatus(t, resp, body, 200)
		wantArchiveFiles(t, format+" with dot permission and nodot", readArchive(t, format, body), "top/", plain)
	}
	// a dot folder's own archive is named without its leading dots
	resp, body := s.do(t, "GET", "/.dotdir/?tar", nil, basicAuth("d:pw2"))
	wantStatus(t, resp, body, 200)
	wantArchiveFiles(t, "dot folder", readArchive(t, "tar", body), "dotdir/", map[string][]byte{"in.txt": []byte("di")})
	// write-only and nothing: no archive
	resp, body = s.do(t, "GET", "/wo/?tar", nil)
	wantStatus(t, resp, body, 401)
	resp, body = s.do(t, "GET", "/wo/?zip", nil, basicAuth("u:pw"))
	wantStatus(t, resp, body, 403)
	// bad formats
	for _, q := range []string{"tar=gz:10", "tar=xz:-1", "tar=bz2:0", "tar=zstd", "tar=gz:x", "zip=cp1252", "tar=gz,xz"} {
		resp, body = s.do(t, "GET", "/?"+q, nil)
		wantStatus(t, resp, body, 400)
	}
	// HEAD: the headers and length of the archive, no body
	resp, _ = s.do(t, "GET", "/?tar", nil)
	hresp, hbody := s.do(t, "HEAD", "/?tar", nil)
	wantStatus(t, hresp, hbody, 200)
	if hresp.ContentLength != resp.ContentLength || len(hbody) != 0 {
		t.Errorf("HEAD: length %d (GET %d), %d body bytes", hresp.ContentLength, resp.ContentLength, len(hbody))
	}
	// ?tar on a file is a plain download
	resp, body = s.do(t, "GET", "/keep.txt?tar", nil)
	wantStatus(t, resp, body, 200)
	if string(body) != "k" {
		t.Errorf("GET /keep.txt?tar = %q", body)
	}
}

// TestArchiveModifierForms: every way of asking for a modifier is
// accepted; an entry that cannot be converted (not really audio) is kept
// as it is. TestMediaArchiveModifiers checks the conversions.
func TestArchiveModifierForms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "a.flac", []byte("x"))
	s := start(t, "-v", dir+"::r")
	for _, q := range []string{"tar&opus", "zip&mp3", "tar&j", "zip=dos&w", "tar&p", "tar=opus", "zip=j"} {
		resp, body := s.do(t, "GET", "/?"+q, nil)
		wantStatus(t, resp, body, 200)
		var got map[string][]byte
		if strings.HasPrefix(q, "zip") {
			got = unzipMembers(t, body)
		} else {
			got = untarMembers(t, body)
		}
		if len(got) != 1 || string(got[sortedMembers(got)]) != "x" || !strings.HasSuffix(sortedMembers(got), "a.flac") {
			t.Errorf("?%s: members %q", q, sortedMembers(got))
		}
	}
}

// TestArchiveCap: with --arch-mt 1, a second xz archive while one runs is
// 503 with Retry-After; an uncompressed one is not capped; when the first
// ends, xz works again.
func TestArchiveCap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "r.bin", xorshiftBytes(64<<20, 3)) // incompressible: fills the socket buffers
	s := start(t, "-v", dir+"::r", "--arch-mt", "1")
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/?tar=xz:0", nil)
	first, err := client.Do(req)
	if err != nil || first.StatusCode != 200 {
		t.Fatalf("first: %v %v", first, err)
	}
	io.ReadFull(first.Body, make([]byte, 1000)) // running, and stalled by us
	for _, q := range []string{"tar=xz", "tar=bz2", "tar=gz:6"} {
		resp, body := s.do(t, "GET", "/?"+q, nil)
		wantStatus(t, resp, body, 503)
		if resp.Header.Get("Retry-After") == "" {
			t.Errorf("?%s: 503 without Retry-After", q)
		}
	}
	resp, err := client.Get(s.URL + "/?tar=gz:1")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("gz:1 is not capped: %v %v", resp, err)
	}
	resp.Body.Close()
	cancel() // the client leaves: the server must free the slot at once
	first.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, body := s.do(t, "HEAD", "/?tar=xz", nil)
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slot was not freed after the client left: %d %q", resp.StatusCode, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestArchiveChangedFileCutsTransfer: a file that grows while it is being
// sent ends the response short of its length (tar) or without the
// chunked end (tar.gz), so the client sees an error, never a whole archive.
func TestArchiveChangedFileCutsTransfer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := writeFile(t, dir, "grows.bin", xorshiftBytes(64<<20, 4))
	writeFile(t, dir, "z.txt", []byte("after"))
	s := start(t, "-v", dir+"::r")
	for _, format := range []string{"tar", "tar=gz:1", "zip"} {
		resp, err := client.Get(s.URL + "/?" + format)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", format, resp, err)
		}
		io.ReadFull(resp.Body, make([]byte, 1<<20)) // the body is being sent
		f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		f.Write([]byte("grown"))
		f.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Errorf("%s: the archive of a file that grew ended normally", format)
		}
		os.Truncate(p, 64<<20)
	}
}
