package checker

import (
	"cmp"
	"slices"

	"github.com/idembench/idembench/history"
)

// partition groups the call and effect ops of a history by key without
// copying them: keys in order of first appearance, and for key k the op
// indices idx[start[k]:start[k+1]], sorted by Call (ties by index). Fault
// ops belong to no key; their indices are in faults, sorted by Call.
type partition struct {
	keys   []string
	start  []int32
	idx    []int32
	faults []int32
}

func partitionByKey(ops []history.Op) *partition {
	p := &partition{}
	ids := make(map[string]int32, min(len(ops)/8, 1<<20)) // a guess that saves most of the growth
	keyOf := make([]int32, len(ops))
	var counts []int32
	for i := range ops {
		op := &ops[i]
		if op.Kind == history.KindFault {
			keyOf[i] = -1
			p.faults = append(p.faults, int32(i))
			continue
		}
		id, ok := ids[op.Key]
		if !ok {
			id = int32(len(p.keys))
			ids[op.Key] = id
			p.keys = append(p.keys, op.Key)
			counts = append(counts, 0)
		}
		keyOf[i] = id
		counts[id]++
	}
	p.start = make([]int32, len(p.keys)+1)
	for k, c := range counts {
		p.start[k+1] = p.start[k] + c
	}
	p.idx = make([]int32, p.start[len(p.keys)])
	fill := slices.Clone(p.start[:len(p.keys)])
	for i, k := range keyOf {
		if k >= 0 {
			p.idx[fill[k]] = int32(i)
			fill[k]++
		}
	}
	byCall := func(a, b int32) int {
		if c := cmp.Compare(ops[a].Call, ops[b].Call); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	}
	for k := range p.keys {
		g := p.idx[p.start[k]:p.start[k+1]]
		if !slices.IsSortedFunc(g, byCall) {
			slices.SortFunc(g, byCall)
		}
	}
	slices.SortFunc(p.faults, byCall)
	return p
}

// group returns the op indices of key k.
func (p *partition) group(k int) []int32 { return p.idx[p.start[k]:p.start[k+1]] }
