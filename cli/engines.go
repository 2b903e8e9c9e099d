package cli

import (
	"fmt"
	"strings"

	"github.com/idembench/idembench/harness"
)

// enginesCmd is `idembench engines`.
type enginesCmd struct{}

// engineJSON is one entry of `idembench engines --json`.
type engineJSON struct {
	Name     string   `json:"name"`
	Backends []string `json:"backends"`
	Tx       bool     `json:"tx"`
}

func (c *enginesCmd) Run(std stdio, g *globals, reg *harness.Registry) error {
	var list []engineJSON
	for _, name := range reg.Names() {
		e, _ := reg.Lookup(name)
		bs := e.Backends
		if len(bs) == 0 {
			bs = harness.Backends
		}
		row := engineJSON{Name: name, Tx: e.OpenTxSink != nil}
		for _, b := range bs {
			row.Backends = append(row.Backends, string(b))
		}
		list = append(list, row)
	}
	if g.JSON {
		return writeJSON(std.out, list)
	}
	for _, e := range list {
		tx := ""
		if e.Tx {
			tx = " · sink tx"
		}
		fmt.Fprintf(std.out, "%-28s %s%s\n", e.Name, strings.Join(e.Backends, ", "), tx)
	}
	return nil
}
