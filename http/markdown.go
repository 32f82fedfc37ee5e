package http

import (
	"bytes"
	"html/template"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// mdMax is the largest Markdown file ?v renders; larger ones go out as
// plain text.
const mdMax = 4 << 20

// md renders Markdown. Raw HTML in the source is not rendered (goldmark's
// default without html.WithUnsafe: it becomes a comment), and links or
// images with javascript:, vbscript:, data: (other than images) or file:
// URLs lose their destination; the page's CSP forbids script besides.
var md = goldmark.New(goldmark.WithExtensions(extension.GFM))

// view answers ?v: Markdown rendered to HTML, a player page for audio and
// video, a viewer page for images; other files are served as usual.
func (s *Server) view(q *req, f *os.File, fi fs.FileInfo) error {
	if done, err := viewPage(q, f, fi); done {
		return err
	}
	// Nothing to render: the file itself.
	delete(q.query, "v")
	return s.serveFile(q, f, fi)
}

// viewPage answers ?v with a page when the file has one (Markdown
// rendered, a player, a viewer), reading the file from f (a file on
// disk or an object); done is false when the file itself is the answer.
func viewPage(q *req, f io.Reader, fi fs.FileInfo) (done bool, err error) {
	name := path.Base("/" + q.rel)
	ext := strings.ToLower(path.Ext(name))
	ct := contentType(name)
	src := escapeName(name)
	if k := q.query.Get("k"); k != "" {
		src += "?k=" + escapeName(k)
	}
	page := struct {
		Title, Src, Type string
		Body             template.HTML
	}{Title: name, Src: src, Type: ct}
	switch {
	case ext == ".md" || ext == ".markdown":
		if fi.Size() > mdMax {
			break // served as the text it is
		}
		src, err := io.ReadAll(io.LimitReader(f, mdMax))
		if err != nil {
			return true, err
		}
		var out bytes.Buffer
		if err := md.Convert(src, &out); err != nil {
			return true, err
		}
		page.Body = template.HTML(out.String()) // goldmark's safe mode output
		return true, writePage(q, mdPage, page)
	case strings.HasPrefix(ct, "audio/"):
		return true, writePage(q, audioPage, page)
	case strings.HasPrefix(ct, "video/"):
		return true, writePage(q, videoPage, page)
	case strings.HasPrefix(ct, "image/") && policyOf(ct, false) == bodyPolicy{}:
		return true, writePage(q, imagePage, page)
	}
	return false, nil
}

const pageHead = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>body{font-family:sans-serif;max-width:60em;margin:1em auto;padding:0 1em}pre{overflow:auto;background:#eee;padding:.5em}table{border-collapse:collapse}th,td{border:1px solid #999;padding:.2em .6em}code{background:#eee;padding:0 .2em}img,video{max-width:100%}</style>
</head><body>
`

var (
	mdPage    = template.Must(template.New("md").Parse(pageHead + `{{.Body}}</body></html>` + "\n"))
	audioPage = template.Must(template.New("audio").Parse(pageHead + `<h1>{{.Title}}</h1><audio controls autoplay src="{{.Src}}"></audio><p><a href="{{.Src}}">download</a></p></body></html>` + "\n"))
	videoPage = template.Must(template.New("video").Parse(pageHead + `<h1>{{.Title}}</h1><video controls src="{{.Src}}"></video><p><a href="{{.Src}}">download</a></p></body></html>` + "\n"))
	imagePage = template.Must(template.New("image").Parse(pageHead + `<h1>{{.Title}}</h1><a href="{{.Src}}"><img src="{{.Src}}" alt="{{.Title}}"></a></body></html>` + "\n"))
)
