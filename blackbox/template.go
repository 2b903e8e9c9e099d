package blackbox

import (
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
)

// tmpl is a compiled request template. Templates that are only text and
// plain fields ({{.Key}}) are rendered by direct substitution, which costs
// far less per request than text/template; any other template (functions,
// pipelines, conditionals) falls back to text/template.
type tmpl struct {
	t    *template.Template
	segs []segment // nil when the template needs text/template
}

// segment is literal text, or a field of Fields when field is not 0.
type segment struct {
	text  string
	field fieldID
}

type fieldID uint8

const (
	noField fieldID = iota
	fieldKey
	fieldSeq
	fieldAmount
	fieldAddr
	fieldPort
	fieldDownstreamURL
)

var fieldIDs = map[string]fieldID{
	"Key": fieldKey, "Seq": fieldSeq, "Amount": fieldAmount,
	"Addr": fieldAddr, "Port": fieldPort, "DownstreamURL": fieldDownstreamURL,
}

// compile parses s; a parse error is returned as is.
func compile(s string) (*tmpl, error) {
	t, err := parseTemplate(s)
	if err != nil {
		return nil, err
	}
	c := &tmpl{t: t}
	if t.Tree == nil || t.Tree.Root == nil {
		c.segs = []segment{}
		return c, nil
	}
	var segs []segment
	for _, n := range t.Tree.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			segs = append(segs, segment{text: string(n.Text)})
		case *parse.ActionNode:
			id := plainField(n)
			if id == noField {
				return c, nil // needs text/template
			}
			segs = append(segs, segment{field: id})
		default:
			return c, nil
		}
	}
	c.segs = append([]segment{}, segs...)
	return c, nil
}

// plainField returns the field an action {{.Name}} names, noField for any
// other action.
func plainField(n *parse.ActionNode) fieldID {
	p := n.Pipe
	if p == nil || len(p.Decl) > 0 || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return noField
	}
	f, ok := p.Cmds[0].Args[0].(*parse.FieldNode)
	if !ok || len(f.Ident) != 1 {
		return noField
	}
	return fieldIDs[f.Ident[0]]
}

// appendTo renders the template for f onto dst.
func (c *tmpl) appendTo(dst []byte, f *Fields) ([]byte, error) {
	if c.segs == nil {
		var b strings.Builder
		if err := c.t.Execute(&b, f); err != nil {
			return dst, err
		}
		return append(dst, b.String()...), nil
	}
	for _, s := range c.segs {
		switch s.field {
		case noField:
			dst = append(dst, s.text...)
		case fieldKey:
			dst = append(dst, f.Key...)
		case fieldSeq:
			dst = strconv.AppendInt(dst, f.Seq, 10)
		case fieldAmount:
			dst = strconv.AppendInt(dst, f.Amount, 10)
		case fieldAddr:
			dst = append(dst, f.Addr...)
		case fieldPort:
			dst = append(dst, f.Port...)
		case fieldDownstreamURL:
			dst = append(dst, f.DownstreamURL...)
		}
	}
	return dst, nil
}

// render renders the template for f as a string.
func (c *tmpl) render(f *Fields) (string, error) {
	b, err := c.appendTo(nil, f)
	return string(b), err
}
