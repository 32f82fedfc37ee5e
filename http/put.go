package http

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"hoard/arch"
	"hoard/store"
)

// upOpts are the modifiers of a PUT or multipart upload, validated before
// the body is read.
type upOpts struct {
	want    string // "json", "url" or "" (text)
	ck      string
	replace bool
	apnd    bool
	codec   arch.Codec // "" for none
	level   int
	rand    int // random name length; 0 keeps the name
	life    time.Duration
}

// flag reads a boolean modifier from the query or a header: present and
// not "0"/"false"/"no".
func flag(q *req, query, header string) bool {
	r := q.r
	v, ok := q.query[query]
	val := ""
	if ok {
		val = v[0]
	} else if header != "" {
		if h := r.Header.Values(header); len(h) > 0 {
			ok, val = true, h[0]
		}
	}
	if !ok {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(val)) {
	case "0", "false", "no", "n":
		return false
	}
	return true
}

// param returns a modifier's value from the query, else from a header.
func param(q *req, query, header string) (string, bool) {
	r := q.r
	if v, ok := q.query[query]; ok {
		return v[0], true
	}
	if header != "" {
		if h := r.Header.Values(header); len(h) > 0 {
			return h[0], true
		}
	}
	return "", false
}

// overwriteCheck refuses an upload that overwrites or appends (what the
// d permission grants) from another site's page, whoever asks: like
// ?delete (manageCheck), it must not be reachable through a LAN server's
// anonymous d by any page its users open. A new file is not checked.
func (s *Server) overwriteCheck(q *req, o upOpts) error {
	if !o.replace && !o.apnd {
		return nil
	}
	if err := s.cop.Check(q.r); err != nil {
		return errorf(http.StatusForbidden, "overwriting (replace, apnd) rejected by the cross-origin check: %v", err)
	}
	return nil
}

// uploadOptions parses the modifiers; defCK is the volume's default checksum.
func (q *req) uploadOptions(defCK string) (upOpts, error) {
	r := q.r
	var o upOpts
	query := q.query
	switch {
	case query.Get("want") != "":
		o.want = strings.ToLower(query.Get("want"))
	case has(query, "j"):
		o.want = "json"
	default:
		a, _, _ := strings.Cut(r.Header.Get("Accept"), ";")
		a, _, _ = strings.Cut(a, ",")
		switch a = strings.ToLower(strings.TrimSpace(a)); {
		case strings.Contains(a, "json"):
			o.want = "json"
		case a == "url":
			o.want = "url"
		}
	}
	if o.want != "" && o.want != "json" && o.want != "url" {
		return o, errorf(http.StatusBadRequest, "want=%q: want json or url", o.want)
	}

	o.ck = defCK
	if v, ok := param(q, "ck", "CK"); ok && v != "" {
		o.ck = strings.ToLower(v)
	}
	if o.ck == "" {
		o.ck = "sha512"
	}
	if !store.ValidChecksum(o.ck) {
		return o, errorf(http.StatusBadRequest, "unknown checksum ck=%q; use one of %s", o.ck, strings.Join(store.Checksums, ", "))
	}

	o.replace = flag(q, "replace", "Replace")
	o.apnd = flag(q, "apnd", "")
	if o.replace && o.apnd {
		return o, errorf(http.StatusBadRequest, "replace and apnd cannot be combined")
	}
	if (o.replace || o.apnd) && !q.perm.Has(store.PermDelete) {
		what := "overwrite (replace)"
		if o.apnd {
			what = "append (apnd)"
		}
		if q.user == "" {
			return o, errUnauthorized
		}
		return o, errorf(http.StatusForbidden, "user %s may not %s here: that needs the delete permission", q.acct(), what)
	}

	for _, c := range []arch.Codec{arch.Gzip, arch.XZ} {
		v, ok := query[string(c)]
		if !ok {
			continue
		}
		if o.codec != "" {
			return o, errorf(http.StatusBadRequest, "choose one of gz and xz")
		}
		o.codec, o.level = c, 9
		if c == arch.XZ {
			o.level = 1
		}
		if v[0] != "" {
			n, err := strconv.Atoi(v[0])
			if err != nil || arch.CheckLevel(c, n) != nil {
				return o, errorf(http.StatusBadRequest, "%s=%q: level must be a number from 0 to 9", c, v[0])
			}
			o.level = n
		}
	}

	if v, ok := param(q, "rand", "Rand"); ok {
		n := q.vol.Flags().NRand
		if v != "" {
			var err error
			if n, err = strconv.Atoi(v); err != nil || n < 1 || n > 128 {
				return o, errorf(http.StatusBadRequest, "rand=%q: want a name length from 1 to 128", v)
			}
		}
		o.rand = n
	}
	if q.vol.Flags().Rand {
		o.rand = max(o.rand, q.vol.Flags().NRand)
	}

	if v, ok := param(q, "life", "Life"); ok && v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > 1<<40 {
			return o, errorf(http.StatusBadRequest, "life=%q: want a number of seconds", v)
		}
		if n > 0 && q.vol.Flags().Lifetime == 0 {
			return o, errorf(http.StatusBadRequest, "life= needs a volume with a lifetime (volume flag lifetime=SECONDS); this one has none")
		}
		// Beyond the volume's lifetime it is the volume's (and so never
		// overflows a Duration).
		if lt := q.vol.Flags().Lifetime; n < int64(lt/time.Second) {
			o.life = time.Duration(n) * time.Second
		}
	}
	return o, nil
}

// finalName applies rand and the compression suffix to a file name.
func (o upOpts) finalName(name string) string {
	if o.rand > 0 {
		ext := ""
		if i := strings.LastIndexByte(name, '.'); i > 0 && len(name)-i <= 16 {
			ext = name[i:]
		}
		name = randomName(o.rand) + ext
	}
	if o.codec != "" && !strings.HasSuffix(strings.ToLower(name), o.codec.Suffix()) {
		name += o.codec.Suffix()
	}
	return name
}

func randomName(n int) string {
	b := make([]byte, (n*6+7)/8+1)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)[:n]
}

func (o upOpts) ingest(q *req, name string, size int64) store.IngestOptions {
	in := store.IngestOptions{
		Name: name, Checksum: o.ck, Replace: o.replace, Append: o.apnd, Size: size,
		Life: o.life, Uploader: q.user, ClientIP: q.ip,
	}
	if o.codec != "" {
		codec, level := o.codec, o.level
		in.Encode = func(w io.Writer) (io.WriteCloser, error) { return arch.NewEncoder(codec, level, w) }
	}
	return in
}

// upResult is the spec's upload result plus copyparty's PUT fields.
type upResult struct {
	URL        string `json:"url"`
	Size       int64  `json:"size"`
	SHA512     string `json:"sha512,omitempty"`
	UploadTime int64  `json:"upload_time"`
	FileURL    string `json:"fileurl"`
	FileSz     int64  `json:"filesz"`
	ShaB64     string `json:"sha_b64,omitempty"`
	CK         string `json:"ck"`

	hex string // copyparty's 56-character hex, for the text form
}

// result describes a stored upload. The file key is added to the URL only
// for users who may read, or have G, and never inside a share (its URL
// there needs none; the key would open the file at its own URL, outside
// the share, after the share is gone).
func (q *req) result(o upOpts, res store.IngestResult) upResult {
	u := q.urlOf(res.Rel)
	if q.vol.Flags().FK > 0 && q.perm.Any(store.PermRead|store.PermUpGet) && !q.share {
		u += "?k=" + q.vol.FileKey(res.Rel, res.Info)
	}
	r := upResult{URL: u, Size: res.Size, UploadTime: res.Time.Unix(), FileURL: u, FileSz: res.Size, CK: o.ck}
	if res.Sum != nil {
		r.SHA512 = base64.URLEncoding.EncodeToString(res.Sum)
		r.ShaB64 = base64.URLEncoding.EncodeToString(res.Sum[:min(33, len(res.Sum))])
		r.hex = hex.EncodeToString(res.Sum)
		if len(r.hex) > 56 {
			r.hex = r.hex[:56]
		}
	}
	return r
}

// urlOf is the absolute URL of a path inside the request's volume; inside
// a share, its URL in the share (the uploader may reach it no other way).
func (q *req) urlOf(rel string) string {
	if q.share {
		return q.abs("/" + escapePath(path.Join(q.parts[0], q.parts[1], rel)))
	}
	return q.abs("/" + escapePath(path.Join(q.vol.VPath, rel)))
}

// put stores the request body at the URL's path (PUT).
func (s *Server) put(q *req) error {
	if err := q.needUpload(); err != nil {
		return err
	}
	// WebDAV's PUT refuses a taken name, a folder and a missing parent,
	// which would tell someone who may not read what exists: without r,
	// copyparty's rules (a new name, parents made) hold for every client.
	if !s.dav.Off && !q.share && davClient(q.r) && q.perm.Has(store.PermRead) {
		return s.davPut(q) // dav.go
	}
	o, err := q.uploadOptions(q.vol.Flags().PutCK)
	if err != nil {
		return err
	}
	if err := s.overwriteCheck(q, o); err != nil {
		return err
	}
	dir, name := path.Split(q.rel)
	dir = strings.TrimSuffix(dir, "/")
	nameless := q.slash || q.rel == ""
	if !nameless {
		if fi, err := q.vol.Stat(q.rel); err == nil && fi.IsDir() {
			nameless = true
		}
	}
	if nameless {
		dir, name = q.rel, "put-"+store.NowString(time.Now())+"-"+q.vol.ClientTag(q.ip)+".bin"
	}
	ended := s.upload("put")
	res, err := q.vol.Ingest(q.r.Context(), dir, newIdleReader(q, q.r.Body), o.ingest(q, o.finalName(name), q.r.ContentLength))
	ended(err == nil)
	if err != nil {
		return err
	}
	up := q.result(o, res)
	s.log.Info("upload", "id", q.id, "path", "/"+path.Join(q.vol.VPath, res.Rel), "bytes", res.Size, "user", q.acct(), "ip", q.ip)
	q.w.Header().Set("Location", up.URL)
	return writeUpload(q, o, up)
}

func writeUpload(q *req, o upOpts, up upResult) error {
	h := q.w.Header()
	switch o.want {
	case "json":
		h.Set("Content-Type", "application/json")
		q.w.WriteHeader(http.StatusCreated)
		return json.NewEncoder(q.w).Encode(up)
	case "url":
		h.Set("Content-Type", "text/plain; charset=utf-8")
		q.w.WriteHeader(http.StatusCreated)
		_, err := io.WriteString(q.w, up.URL)
		return err
	}
	b64, hx := up.ShaB64, up.hex
	if up.SHA512 == "" {
		b64, hx = "checksum-disabled", "checksum-disabled"
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	q.w.WriteHeader(http.StatusCreated)
	_, err := fmt.Fprintf(q.w, "%d\n%s\n%s\n%s\n", up.Size, b64, hx, up.URL)
	return err
}

// mpFile is one file of a multipart upload's JSON reply.
type mpFile struct {
	upResult
	Sz     int64  `json:"sz"`
	Fn     string `json:"fn"`
	FnOrig string `json:"fn_orig"`
	Path   string `json:"path"`
}

type mpReply struct {
	Status  string   `json:"status"`
	Sz      int64    `json:"sz"`
	Files   []mpFile `json:"files"`
	FileURL string   `json:"fileurl,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// multipart stores each file part of a multipart/form-data POST into the
// URL's folder (field f, repeatable; copyparty's leading act=bput works
// too). An error stops the request; files already stored stay and are
// listed in the reply.
func (s *Server) multipart(q *req) error {
	q.r.Body = struct {
		io.Reader
		io.Closer
	}{newIdleReader(q, q.r.Body), q.r.Body}
	mr, mrErr := q.r.MultipartReader()
	// copyparty's login form is multipart too (act=login, cppwd): it needs
	// no write permission, so the first field is looked at before the
	// upload checks. Anything else is refused by those checks before more
	// of the body is read.
	var first *multipart.Part
	var firstVal []byte
	if mrErr == nil {
		first, mrErr = mr.NextPart()
		if mrErr == nil && first.FileName() == "" && first.FormName() == "act" {
			v, err := io.ReadAll(io.LimitReader(first, 64+1))
			if err != nil || len(v) > 64 {
				v = nil
			}
			firstVal = v
			if a := string(v); a == "login" || a == "logout" {
				return s.loginMultipart(q, mr, a)
			}
		}
	}
	if err := q.needUpload(); err != nil {
		return err
	}
	o, err := q.uploadOptions(q.vol.Flags().BupCK)
	if err != nil {
		return err
	}
	if err := s.overwriteCheck(q, o); err != nil {
		return err
	}
	if o.apnd || o.codec != "" {
		return errorf(http.StatusBadRequest, "apnd, gz and xz apply to PUT uploads only")
	}
	if fi, err := q.vol.Stat(q.rel); err == nil && !fi.IsDir() {
		return errorf(http.StatusBadRequest, "multipart uploads go to a folder; /%s is a file", strings.Join(q.parts, "/"))
	}
	if mrErr != nil && !errors.Is(mrErr, io.EOF) {
		return errorf(http.StatusBadRequest, "bad multipart body: %v", mrErr)
	}
	rep := mpReply{Status: "OK", Files: []mpFile{}}
	isFirst := true
	for {
		var p *multipart.Part
		var err error
		if isFirst {
			p, err = first, mrErr
		} else {
			p, err = mr.NextPart()
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return s.mpFail(q, o, rep, errorf(http.StatusBadRequest, "bad multipart body: %v", err))
		}
		if p.FileName() == "" {
			if isFirst && p.FormName() != "act" {
				return s.mpFail(q, o, rep, errorf(http.StatusBadRequest, `expected field "act" or a file field "f" first, got %q`, p.FormName()))
			}
			var v []byte
			if isFirst {
				v = firstVal
				if v == nil {
					return s.mpFail(q, o, rep, errorf(http.StatusBadRequest, "form field %q is too large or unreadable", p.FormName()))
				}
			} else {
				v, err = io.ReadAll(io.LimitReader(p, 64<<10+1))
				if err != nil || len(v) > 64<<10 {
					return s.mpFail(q, o, rep, errorf(http.StatusBadRequest, "form field %q is too large or unreadable", p.FormName()))
				}
			}
			if p.FormName() == "act" {
				switch string(v) {
				case "mkdir":
					if isFirst {
						return s.mkdirMultipart(q, mr)
					}
					return s.mpFail(q, o, rep, errorf(http.StatusBadRequest, "act=mkdir must come first"))
				case "bput":
				case "uput":
					o.ck = "no"
				default:
					return s.mpFail(q, o, rep, errorf(http.StatusBadRequest, "invalid action %q (this server takes bput and uput)", v))
				}
			}
			isFirst = false
			continue
		}
		isFirst = false
		f, err := s.mpFile(q, o, p)
		if err != nil {
			return s.mpFail(q, o, rep, err)
		}
		rep.Files = append(rep.Files, f)
		rep.Sz += f.Size
	}
	if len(rep.Files) == 0 {
		return errorf(http.StatusBadRequest, "the form has no file (field f with a filename)")
	}
	if len(rep.Files) == 1 {
		rep.FileURL = rep.Files[0].URL
	}
	return writeMultipart(q, o, rep, http.StatusCreated)
}

// maxPasswordField bounds the cppwd field of a multipart login form.
const maxPasswordField = 4096

// loginMultipart reads the rest of copyparty's multipart login form (its
// cppwd field; uhash and anything else are skipped) and answers it as the
// urlencoded form is answered.
func (s *Server) loginMultipart(q *req, mr *multipart.Reader, act string) error {
	f, err := loginFields(mr, act)
	if err != nil {
		return err
	}
	return s.login(q, f)
}

// loginFields reads the rest of a multipart login form (its act already
// read): the first cppwd field, at most maxPasswordField bytes.
func loginFields(mr *multipart.Reader, act string) (url.Values, error) {
	f := url.Values{"act": {act}}
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "bad multipart body: %v", err)
		}
		if p.FormName() != "cppwd" || f.Has("cppwd") {
			continue
		}
		v, err := io.ReadAll(io.LimitReader(p, maxPasswordField+1))
		if err != nil || len(v) > maxPasswordField {
			return nil, errorf(http.StatusBadRequest, "the password field is longer than %d bytes", maxPasswordField)
		}
		f.Set("cppwd", string(v))
	}
	return f, nil
}

func (s *Server) mpFile(q *req, o upOpts, p *multipart.Part) (mpFile, error) {
	orig := p.FileName() // already reduced to its last element by mime/multipart
	name := strings.TrimSpace(path.Base("/" + strings.ReplaceAll(orig, "\\", "/")))
	if err := store.CheckName(name); err != nil {
		return mpFile{}, errorf(http.StatusBadRequest, "bad file name %q", orig)
	}
	ended := s.upload("multipart")
	res, err := q.vol.Ingest(q.r.Context(), q.rel, p, o.ingest(q, o.finalName(name), -1))
	ended(err == nil)
	if err != nil {
		return mpFile{}, err
	}
	s.log.Info("upload", "id", q.id, "path", "/"+path.Join(q.vol.VPath, res.Rel), "bytes", res.Size, "user", q.acct(), "ip", q.ip)
	up := q.result(o, res)
	return mpFile{upResult: up, Sz: res.Size, Fn: path.Base(res.Rel), FnOrig: orig, Path: strings.TrimPrefix(strings.TrimPrefix(up.URL, q.abs("")), "/")}, nil
}

// mpFail answers a multipart upload that stopped at an error, listing the
// files stored before it.
func (s *Server) mpFail(q *req, o upOpts, rep mpReply, err error) error {
	if len(rep.Files) == 0 {
		return err
	}
	code, msg := statusOf(err)
	if code >= 500 {
		s.log.Error("multipart upload failed", "id", q.id, "err", err)
	}
	q.w.Header().Set("Connection", "close")
	rep.Status, rep.Error = "ERROR", msg
	return writeMultipart(q, o, rep, code)
}

func writeMultipart(q *req, o upOpts, rep mpReply, code int) error {
	h := q.w.Header()
	switch o.want {
	case "json":
		h.Set("Content-Type", "application/json")
		q.w.WriteHeader(code)
		return json.NewEncoder(q.w).Encode(rep)
	case "url":
		urls := make([]string, len(rep.Files))
		for i, f := range rep.Files {
			urls[i] = f.URL
		}
		s := strings.Join(urls, "\n")
		if rep.Error != "" {
			s += "\nERROR: " + rep.Error
		}
		h.Set("Content-Type", "text/plain; charset=utf-8")
		q.w.WriteHeader(code)
		_, err := io.WriteString(q.w, s)
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s // %d bytes // %d files\n", rep.Status, rep.Sz, len(rep.Files))
	for _, f := range rep.Files {
		if f.SHA512 != "" {
			fmt.Fprintf(&b, "%s: %s // %s // %d bytes // %s\n", f.CK, f.hex, f.ShaB64, f.Sz, f.URL)
		} else {
			fmt.Fprintf(&b, "%d bytes // %s\n", f.Sz, f.URL)
		}
	}
	if rep.Error != "" {
		fmt.Fprintf(&b, "ERROR: %s\n", rep.Error)
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	q.w.WriteHeader(code)
	_, err := io.WriteString(q.w, b.String())
	return err
}
