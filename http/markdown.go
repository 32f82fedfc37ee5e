package http

import (
	"bytes"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"runtime"
	"strings"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// mdMax is the largest Markdown file ?v renders; larger ones go out as
// plain text.
const mdMax = 4 << 20

// md renders Markdown. Raw HTML in the source is not rendered (goldmark's
// default without html.WithUnsafe: it becomes a comment), and links or
// images with javascript:, vbscript:, data: (other than images) or file:
// URLs lose their destination; the page's CSP forbids script besides.
var md = goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithParserOptions(
	parser.WithBlockParsers(util.Prioritized(mdGuardBlock{}, 0)),
	parser.WithInlineParsers(util.Prioritized(mdGuardInline{}, 0)),
))

// Rendering Markdown has inputs whose cost grows with the square of their
// length (goldmark: a line of nested block quotes, a paragraph of
// unclosed link destinations, many link definitions): 256 KiB of ">"
// takes 16 s of CPU, 4 MiB over an hour. So a render has a deadline,
// checked between goldmark's steps by a block and an inline parser that
// match nothing (mdGuard*); a render past it, or one whose tree is
// deeper than mdMaxDepth (rendering recurses once per level), is
// abandoned and the file goes out as the text it is. At most one render
// per core runs at once; past that ?v of Markdown is answered 503.
var (
	mdBudget   = 2 * time.Second // a variable so that tests can shorten it
	mdSlots    = make(chan struct{}, runtime.NumCPU())
	mdGuardKey = parser.NewContextKey()
)

const mdMaxDepth = 1000

// mdGuard is one render's deadline, kept in its parser.Context.
type mdGuard struct {
	deadline time.Time
	n        int
}

// mdTooCostly is what a guard panics with past its deadline.
type mdTooCostly struct{}

func (g *mdGuard) check() {
	if g.n++; g.n&31 == 0 && time.Now().After(g.deadline) {
		panic(mdTooCostly{})
	}
}

func guardOf(pc parser.Context) {
	if g, ok := pc.Get(mdGuardKey).(*mdGuard); ok {
		g.check()
	}
}

// mdGuardBlock is consulted first whenever goldmark tries to open a block
// (every line, and every nesting level of a line); it opens none.
type mdGuardBlock struct{}

func (mdGuardBlock) Trigger() []byte {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	return all
}

func (mdGuardBlock) Open(_ ast.Node, _ text.Reader, pc parser.Context) (ast.Node, parser.State) {
	guardOf(pc)
	return nil, parser.NoChildren
}

func (mdGuardBlock) Continue(ast.Node, text.Reader, parser.Context) parser.State { return parser.Close }
func (mdGuardBlock) Close(ast.Node, text.Reader, parser.Context)                 {}
func (mdGuardBlock) CanInterruptParagraph() bool                                 { return true }
func (mdGuardBlock) CanAcceptIndentedLine() bool                                 { return true }

// mdGuardInline is consulted first at every character an inline parser
// of goldmark's starts at; it parses nothing.
type mdGuardInline struct{}

func (mdGuardInline) Trigger() []byte { return []byte(" *_~`<>[]!()&\\") }

func (mdGuardInline) Parse(_ ast.Node, _ text.Reader, pc parser.Context) ast.Node {
	guardOf(pc)
	return nil
}

// renderMarkdown renders src to HTML; ok is false when the render was
// abandoned (past mdBudget, or nested deeper than mdMaxDepth).
func renderMarkdown(src []byte) (out []byte, ok bool, err error) {
	pc := parser.NewContext()
	pc.Set(mdGuardKey, &mdGuard{deadline: time.Now().Add(mdBudget)})
	var doc ast.Node
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, costly := r.(mdTooCostly); !costly {
					panic(r)
				}
				doc = nil
			}
		}()
		doc = md.Parser().Parse(text.NewReader(src), parser.WithContext(pc))
	}()
	if doc == nil || mdDepth(doc) > mdMaxDepth {
		return nil, false, nil
	}
	var b bytes.Buffer
	if err := md.Renderer().Render(&b, src, doc); err != nil {
		return nil, false, err
	}
	return b.Bytes(), true, nil
}

// mdDepth is the depth of the tree below n, found without recursion.
func mdDepth(n ast.Node) int {
	depth, most := 0, 0
	for n != nil {
		if c := n.FirstChild(); c != nil {
			n, depth = c, depth+1
			most = max(most, depth)
			continue
		}
		for n != nil && n.NextSibling() == nil {
			n, depth = n.Parent(), depth-1
		}
		if n != nil {
			n = n.NextSibling()
		}
	}
	return most
}

// view answers ?v: Markdown rendered to HTML, a player page for audio and
// video, a viewer page for images; other files are served as usual.
func (s *Server) view(q *req, f *os.File, fi fs.FileInfo) error {
	if done, err := viewPage(q, f, fi); done {
		return err
	}
	// Nothing to render: the file itself (from its start: a render
	// abandoned has read it).
	delete(q.query, "v")
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
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
		select {
		case mdSlots <- struct{}{}:
			defer func() { <-mdSlots }()
		default:
			q.w.Header().Set("Retry-After", "2")
			return true, errorf(http.StatusServiceUnavailable, "every core is rendering Markdown already; retry shortly, or fetch the file without ?v")
		}
		src, err := io.ReadAll(io.LimitReader(f, mdMax))
		if err != nil {
			return true, err
		}
		out, ok, err := renderMarkdown(src)
		if err != nil {
			return true, err
		}
		if !ok {
			break // too costly to render: served as the text it is
		}
		page.Body = template.HTML(out) // goldmark's safe mode output
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
