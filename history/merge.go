package history

import (
	"fmt"
	"io"
	"maps"
)

// Merge combines the histories written by the worker processes of one run
// into one History sorted by Call (ties keep the order of hs, then of each
// input). The headers must agree on Format, Version, Scenario, Seed, Backend,
// Engine and Clock, and their Options must not give one name two values;
// otherwise Merge returns an error naming the first input that disagrees.
// The merged header is the first one with Start set to the earliest Start,
// Options the union, LeaseTTL and Retention the largest, and Process 0. The inputs are not
// modified. Merge of one history returns a sorted copy; Merge of none is an
// error.
func Merge(hs ...*History) (*History, error) {
	if len(hs) == 0 {
		return nil, fmt.Errorf("history: merge of no histories")
	}
	for i, h := range hs {
		if h == nil {
			return nil, fmt.Errorf("history: merge input %d is nil", i)
		}
	}
	out := &History{Header: hs[0].Header}
	out.Header.Options = maps.Clone(hs[0].Header.Options)
	out.Header.Process = 0
	if err := out.Header.validate(); err != nil {
		return nil, fmt.Errorf("merge input 0: %w", err)
	}
	n := 0
	for i, h := range hs {
		n += len(h.Ops)
		if i == 0 {
			continue
		}
		if err := mergeHeader(&out.Header, &h.Header); err != nil {
			return nil, fmt.Errorf("history: merge input %d: %w", i, err)
		}
	}
	out.Ops = make([]Op, 0, n)
	for _, h := range hs {
		out.Ops = append(out.Ops, h.Ops...)
	}
	SortByCall(out.Ops)
	return out, nil
}

func mergeHeader(dst, src *Header) error {
	same := []struct {
		name string
		a, b any
	}{
		{"format", dst.Format, src.Format},
		{"version", dst.Version, src.Version},
		{"scenario", dst.Scenario, src.Scenario},
		{"seed", dst.Seed, src.Seed},
		{"backend", dst.Backend, src.Backend},
		{"engine", dst.Engine, src.Engine},
		{"clock", dst.Clock, src.Clock},
	}
	for _, s := range same {
		if s.a != s.b {
			return fmt.Errorf("header %s %v differs from %v", s.name, s.b, s.a)
		}
	}
	for k, v := range src.Options {
		if old, ok := dst.Options[k]; ok && old != v {
			return fmt.Errorf("header option %s=%q differs from %q", k, v, old)
		}
		if dst.Options == nil {
			dst.Options = make(map[string]string)
		}
		dst.Options[k] = v
	}
	if !src.Start.IsZero() && (dst.Start.IsZero() || src.Start.Before(dst.Start)) {
		dst.Start = src.Start
	}
	if src.LeaseTTL > dst.LeaseTTL {
		dst.LeaseTTL = src.LeaseTTL
	}
	if src.Retention > dst.Retention {
		dst.Retention = src.Retention
	}
	return nil
}

// MergeStreams decodes each reader with Decode and merges the results with
// Merge. An error names the index of the stream it came from.
func MergeStreams(rs ...io.Reader) (*History, error) {
	hs := make([]*History, len(rs))
	for i, r := range rs {
		h, err := Decode(r)
		if err != nil {
			return nil, fmt.Errorf("stream %d: %w", i, err)
		}
		hs[i] = h
	}
	return Merge(hs...)
}
