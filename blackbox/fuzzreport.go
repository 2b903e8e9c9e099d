package blackbox

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// fuzzRows sums the cases up in the two rows of the conformance table.
func (p *prober) fuzzRows(cases []FuzzCase) []ProbeResult {
	rows := []ProbeResult{
		{ID: ProbeFingerprintSame, Title: "equivalent request, same key", Section: Draft + " §2.4",
			Expected: "the first answer replayed (" + p.sameKinds() + ")"},
		{ID: ProbeFingerprintDifferent, Title: "different request, same key", Section: Draft + " §2.4",
			Expected: "422 (" + p.differentKinds() + ")"},
	}
	for i := range rows {
		row := &rows[i]
		row.Status, row.Observed = fuzzVerdict(cases, i == 0)
		if row.Status == ProbeFail {
			// A false replay or a false 422 is a failed expectation of
			// the fingerprint: a protocol deviation (MUST), unless the
			// target's levels weigh it otherwise; never a double
			// execution or a broken replay.
			f := broke(LevelMust, row.Observed)
			if lv, ok := p.t.Conformance.Levels[row.ID]; ok {
				f = broke(lv, row.Observed)
			}
			row.Status, row.Level, row.Class = f.status, f.level, f.class
		}
		if reason, ok := p.t.Conformance.Deviations[row.ID]; ok && (row.Class == ClassDeviation || row.Class == ClassWarning) {
			row.Status, row.Reason = ProbeDeviation, reason
		}
	}
	return rows
}

func (p *prober) sameKinds() string {
	var k []string
	for i := range fuzzVariants {
		if v := &fuzzVariants[i]; v.same && p.t.Conformance.Fingerprint.applies(v) {
			k = append(k, v.name)
		}
	}
	if len(k) == 0 {
		return "none declared"
	}
	return strings.Join(k, ", ")
}

func (p *prober) differentKinds() string {
	var k []string
	for i := range fuzzVariants {
		if v := &fuzzVariants[i]; !v.same && v.name != "body changed" && p.t.Conformance.Fingerprint.applies(v) {
			k = append(k, v.name)
		}
	}
	return strings.Join(k, ", ")
}

// fuzzVerdict returns the status and the observed text of the row of
// equivalent (same) or different variants: fail when any case of the row
// did not pass, naming each failing result with its variants and one key.
func fuzzVerdict(cases []FuzzCase, same bool) (string, string) {
	var sent, passed, skipped int
	type group struct {
		result   string
		variants []string
		count    map[string]int
		statuses []int
		key      string
	}
	var groups []*group
	byResult := map[string]*group{}
	for _, c := range cases {
		if c.Same != same {
			continue
		}
		switch c.Result {
		case FuzzSkipped:
			skipped++
			continue
		case FuzzPass:
			sent++
			passed++
			continue
		}
		sent++
		g := byResult[c.Result]
		if g == nil {
			g = &group{result: c.Result, count: map[string]int{}, key: c.Key}
			byResult[c.Result] = g
			groups = append(groups, g)
		}
		if g.count[c.Variant] == 0 {
			g.variants = append(g.variants, c.Variant)
		}
		g.count[c.Variant]++
		if !slices.Contains(g.statuses, c.Status) {
			g.statuses = append(g.statuses, c.Status)
		}
	}
	if sent == 0 {
		if skipped > 0 {
			return ProbeSkipped, fmt.Sprintf("the first request of each of %d key(s) did not succeed", skipped)
		}
		return ProbeSkipped, "no variant of this kind applies to the body"
	}
	want := "replayed"
	if !same {
		want = "refused with 422"
	}
	obs := fmt.Sprintf("%d of %d %s", passed, sent, want)
	for _, g := range groups {
		var vs []string
		for _, v := range g.variants {
			vs = append(vs, fmt.Sprintf("%s ×%d", v, g.count[v]))
		}
		obs += fmt.Sprintf("; %s on %d: %s (status %s, key %s)", fuzzResultText[g.result], sumCounts(g.count),
			strings.Join(vs, ", "), joinInts(g.statuses), g.key)
	}
	if skipped > 0 {
		obs += fmt.Sprintf("; %d skipped (the first request did not succeed)", skipped)
	}
	if len(groups) > 0 {
		return ProbeFail, obs
	}
	return ProbePass, obs
}

var fuzzResultText = map[string]string{
	FuzzFalse422:      "false 422",
	FuzzFalseReplay:   "false replay",
	FuzzExecutedAgain: "executed again under the used key",
	FuzzUnexpected:    "unexpected answer",
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		if x == 0 {
			s[i] = "none"
		} else {
			s[i] = strconv.Itoa(x)
		}
	}
	return strings.Join(s, "/")
}
