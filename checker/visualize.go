package checker

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/idembench/idembench/history"
)

// visualizeFailures writes Porcupine's HTML for the keys listed with an I4
// violation, at most opts.MaxVisualizations of them, and records the paths
// in the violations. Failures to write are reported as notes.
func visualizeFailures(rep *Report, ops []history.Op, p *partition, opts Options) {
	if err := os.MkdirAll(opts.VisualizeDir, 0o755); err != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("visualizations not written: %v", err))
		return
	}
	written := 0
	for vi := range rep.Violations {
		v := &rep.Violations[vi]
		if v.Invariant != I4Linearizable {
			continue
		}
		if written >= opts.MaxVisualizations {
			rep.Notes = append(rep.Notes, fmt.Sprintf("only the first %d failing keys were visualized", written))
			return
		}
		k := slices.Index(p.keys, v.Key)
		if k < 0 {
			continue
		}
		path := filepath.Join(opts.VisualizeDir, fileName(v.Key))
		if err := visualizeKey(path, ops, p, k, opts); err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("visualization of key %q: %v", v.Key, err))
			continue
		}
		v.VisualizationPath = path
		written++
	}
}

// visualizeKey runs the verbose check on every call and effect of key k
// (ops that cannot change the verdict are shown as no-ops) and writes the
// HTML to path. Calls are drawn one row per client, effects in rows below
// them, fault windows as annotations.
func visualizeKey(path string, ops []history.Op, p *partition, k int, opts Options) error {
	g := p.group(k)
	var f keyFacts
	for _, i := range g {
		op := &ops[i]
		switch {
		case op.Kind == history.KindEffect && op.Applied && op.Outcome == history.OutcomeNone:
			f.applied++
		case op.Outcome == history.Executed || (op.Outcome == history.Failed && op.Token != 0):
			f.committer = true
		}
	}
	rows := rowMapper{}
	pops := make([]porcupine.Operation, 0, len(g))
	lo, hi := history.NoReturn, int64(-1<<63)
	for _, i := range g {
		op := &ops[i]
		var in any = op
		ret := op.Return
		if affectsModel(op, f) {
			if op.Outcome == history.Unknown {
				ret = history.NoReturn
			}
		} else {
			in = noopOp{op}
		}
		lo = min(lo, op.Call)
		hi = max(hi, op.Call)
		if ret != history.NoReturn {
			hi = max(hi, ret)
		}
		pops = append(pops, porcupine.Operation{
			ClientId: rows.row(op), Input: in, Call: op.Call, Return: ret,
			Metadata: fmt.Sprintf("op %d: client %d worker %d req %d attempt %d exec %s %s", i, op.Client, op.Worker,
				op.Request, op.Attempt, op.Exec, op.Err),
		})
	}
	_, info := porcupine.CheckOperationsVerbose(keyModel, pops, opts.VisualizeTimeout)
	var notes []porcupine.Annotation
	for _, i := range p.faults {
		fo := &ops[i]
		if (fo.Key != "" && fo.Key != p.keys[k]) || fo.Call > hi || fo.Return < lo {
			continue
		}
		end := fo.Return
		if end == history.NoReturn {
			end = hi
		}
		notes = append(notes, porcupine.Annotation{
			Tag: "faults", Start: fo.Call, End: end, Description: fo.Label,
			Details:         fmt.Sprintf("op %d: client %d worker %d, %d..%d", i, fo.Client, fo.Worker, fo.Call, fo.Return),
			BackgroundColor: "#f7c6c6",
		})
	}
	info.AddAnnotations(notes)
	return porcupine.VisualizePath(keyModel, info, path)
}

// rowMapper gives each client's calls a row, and each client's effects a
// separate row, numbered from 0 in order of appearance.
type rowMapper map[[2]int]int

func (m rowMapper) row(op *history.Op) int {
	k := [2]int{op.Client, int(op.Kind)}
	r, ok := m[k]
	if !ok {
		r = len(m)
		m[k] = r
	}
	return r
}

// fileName turns a key into a safe file name: characters outside
// [A-Za-z0-9._-] become '_', long keys are cut, and when anything changed a
// hash of the real key is appended so that distinct keys never collide.
func fileName(key string) string {
	var b strings.Builder
	for _, c := range []byte(key) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 100 {
		s = s[:100]
	}
	if s != key || s == "" || s[0] == '.' {
		h := fnv.New32a()
		h.Write([]byte(key))
		s = fmt.Sprintf("%s-%08x", s, h.Sum32())
	}
	return s + ".html"
}
