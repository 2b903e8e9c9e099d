package scenarios

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// schemaErr checks a parsed document against the shape of a scenario file
// (the yaml tags of file) before the strict decode, so that an unknown
// field or a value of the wrong shape is reported as the file spells it —
// the field's path, its line, what it takes — and not in the decoder's Go
// type names. It returns nil for a document it cannot walk (the decode
// reports that).
func schemaErr(b []byte) error {
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	return walkSchema("", doc.Content[0], reflect.TypeFor[file]())
}

// walkSchema checks node n, at path, against type t.
func walkSchema(path string, n *yaml.Node, t reflect.Type) error {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil // an empty value: the field's zero
	}
	what := describe(t)
	switch {
	case scalarType(t):
		if n.Kind != yaml.ScalarNode {
			return schemaAt(path, n, "want %s, not %s", what, shape(n))
		}
		switch t.Kind() {
		case reflect.Float64:
			if tag := n.ShortTag(); tag != "!!int" && tag != "!!float" {
				return schemaAt(path, n, "%q is not a number", n.Value)
			}
		case reflect.Bool:
			if n.ShortTag() != "!!bool" {
				return schemaAt(path, n, "%q is not true or false", n.Value)
			}
		}
		return nil
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return schemaAt(path, n, "want %s, not %s", what, shape(n))
		}
		for i, c := range n.Content {
			if err := walkSchema(fmt.Sprintf("%s[%d]", path, i), c, t.Elem()); err != nil {
				return err
			}
		}
		return nil
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return schemaAt(path, n, "want %s, not %s", what, shape(n))
		}
		fields := fieldsOf(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			ft, ok := fields[k.Value]
			if !ok {
				msg := "unknown field; " + where(path) + " takes " + strings.Join(fieldNames(t), ", ")
				if s := closest(k.Value, fieldNames(t)); s != "" {
					msg = fmt.Sprintf("unknown field (did you mean %s?); %s takes %s", s, where(path), strings.Join(fieldNames(t), ", "))
				}
				return schemaAt(p, k, "%s", msg)
			}
			if err := walkSchema(p, v, ft); err != nil {
				return err
			}
		}
	}
	return nil
}

// schemaAt formats an error about the value at path, node n.
func schemaAt(path string, n *yaml.Node, format string, args ...any) error {
	if path == "" {
		path = "the file"
	}
	return fmt.Errorf("line %d: %s: %s", n.Line, path, fmt.Sprintf(format, args...))
}

func where(path string) string {
	if path == "" {
		return "a scenario"
	}
	return path
}

// scalarType reports whether t is written as one YAML scalar: a number,
// text, true/false, or a type that reads itself from one (a duration, the
// heartbeat).
func scalarType(t reflect.Type) bool {
	if reflect.PointerTo(t).Implements(reflect.TypeFor[yaml.Unmarshaler]()) {
		return true
	}
	switch t.Kind() {
	case reflect.String, reflect.Int, reflect.Float64, reflect.Bool:
		return true
	}
	return false
}

// describe says what a value of type t is, as the file writes it.
func describe(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[duration]():
		return "a duration (e.g. 250ms or 2s)"
	case t == reflect.TypeFor[heartbeat]():
		return "on, off or an interval"
	case t.Kind() == reflect.Int:
		return "a whole number"
	case t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() == reflect.String:
		return "text"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		return "a list of entries with the fields " + strings.Join(fieldNames(t.Elem()), ", ")
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Float64:
		return "a list of numbers"
	case t.Kind() == reflect.Slice:
		return "a list of values, each " + describe(t.Elem())
	case t.Kind() == reflect.Struct:
		return "fields (" + strings.Join(fieldNames(t), ", ") + ")"
	}
	return "a value"
}

// shape names what node n holds, for an error.
func shape(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "fields"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%q", n.Value)
}

// fieldsOf maps the yaml names of struct t's fields to their types.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for f := range t.Fields() {
		if name := yamlName(f); name != "" {
			m[name] = f.Type
		}
	}
	return m
}

// fieldNames lists the yaml names of struct t's fields, in order.
func fieldNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		if name := yamlName(f); name != "" {
			names = append(names, name)
		}
	}
	return names
}

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" || !f.IsExported() {
		return ""
	}
	return name
}

// closest returns the name in names nearest to s, when it is at most two
// edits away; "" otherwise.
func closest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// goTypes matches the Go type names a YAML decode error may hold.
var goTypes = regexp.MustCompile(`( into| in type) (\[\])?(\*?scenarios\.\w+|\w+\.\w+|float64|int|string|bool)`)

// decodeErr rewrites an error of the YAML decoder in the file's terms: no
// Go type names, no "unmarshal errors" preamble. The schema check before
// the decode reports most mistakes itself; this is for the rest.
func decodeErr(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: unmarshal errors:\n  ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = goTypes.ReplaceAllString(msg, "")
	return strings.ReplaceAll(msg, "\n  ", "; ")
}
