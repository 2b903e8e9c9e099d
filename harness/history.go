package harness

import (
	"fmt"
	"hash/fnv"
	"maps"

	"github.com/idembench/idembench/history"
)

// HistoryMode says what a run directory keeps of the history
// (Spec.History). The history of a run is large: the default scenario's
// 10 s on memory writes 60 to 95 MB, with the throughput.
type HistoryMode string

const (
	// HistoryFull (the zero value, also "full") writes every op to
	// history.jsonl.
	HistoryFull HistoryMode = ""
	// HistorySampled writes every op of one key in SampleOneIn (by a hash
	// of the key) and every fault. The checker's invariants are per key,
	// so a re-check of the sample gives those keys' verdicts, but the
	// figures measured from it are the sample's, not the run's.
	HistorySampled HistoryMode = "sampled"
	// HistoryNone writes no history.jsonl: the run directory has its
	// summary and reports only, and nothing can be re-checked.
	HistoryNone HistoryMode = "none"
)

// SampleOneIn is the share of keys HistorySampled keeps: one in 16.
const SampleOneIn = 16

// HistoryOption is the history header option (and summary.json option)
// that records a history that is not full: HistoryOptionSampled or
// HistoryOptionNone. A full history does not carry it.
const HistoryOption = "history"

// The values of HistoryOption.
var (
	HistoryOptionSampled = fmt.Sprintf("sampled: every op of 1 key in %d (FNV-1a of the key) and every fault", SampleOneIn)
	HistoryOptionNone    = "none: no history.jsonl was written"
)

// ParseHistoryMode returns the mode called s: "full" (or empty),
// "sampled" or "none"; anything else wraps ErrConfig.
func ParseHistoryMode(s string) (HistoryMode, error) {
	switch s {
	case "", "full":
		return HistoryFull, nil
	case string(HistorySampled), string(HistoryNone):
		return HistoryMode(s), nil
	}
	return "", ConfigError("history %q: want full, sampled or none", s)
}

// SampledKey reports whether HistorySampled keeps the ops of key.
func SampledKey(key string) bool {
	h := fnv.New32a()
	h.Write([]byte(key))
	return h.Sum32()%SampleOneIn == 0
}

// SampleHistory returns the part of h that HistorySampled writes: the ops
// of the sampled keys (SampledKey), the faults and the ops of no key, with
// the header marked (HistoryOption). h is not changed.
func SampleHistory(h *history.History) *history.History {
	s := &history.History{Header: h.Header}
	s.Header.Options = maps.Clone(h.Header.Options)
	if s.Header.Options == nil {
		s.Header.Options = map[string]string{}
	}
	s.Header.Options[HistoryOption] = HistoryOptionSampled
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind == history.KindFault || op.Key == "" || SampledKey(op.Key) {
			s.Ops = append(s.Ops, *op)
		}
	}
	return s
}
