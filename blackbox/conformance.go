package blackbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Draft is the specification the conformance probes cite.
const Draft = "draft-ietf-httpapi-idempotency-key-header-06"

// The conformance probes, by id. ProbeIDs lists them; the README and the
// printed table name them by these ids, which conformance.deviations and
// conformance.levels use.
const (
	ProbeMissingKey = "missing-key"
	ProbeMismatch   = "different-body"
	ProbeConcurrent = "concurrent-duplicate"
	ProbeReplay     = "replay"
	// ProbeErrorStored checks the error policy of the target's profile
	// (see Profiles); its id was "5xx-not-stored", still accepted.
	ProbeErrorStored = "error-policy"
	ProbeIsolation   = "isolation"
)

// oldProbeIDs maps the ids of earlier versions to the current ones.
var oldProbeIDs = map[string]string{"5xx-not-stored": ProbeErrorStored}

// ProbeIDs lists every probe id, in report order.
var ProbeIDs = []string{ProbeMissingKey, ProbeMismatch, ProbeConcurrent, ProbeReplay, ProbeErrorStored, ProbeIsolation}

// Probe statuses.
const (
	ProbePass = "pass"
	// ProbeFail is a failed check of class ClassDoubleExecution,
	// ClassBrokenReplay or ClassDeviation (a MUST).
	ProbeFail = "fail"
	// ProbeWarn is a failed SHOULD or MAY: reported, never a failed run.
	ProbeWarn      = "warn"
	ProbeDeviation = "deviation" // failed or warned, but declared by the target
	ProbeSkipped   = "skipped"
)

// Requirement levels (RFC 2119) of what a probe checks, as the draft and
// the target's profile weigh it; conformance.levels overrides them.
const (
	LevelMust   = "MUST"
	LevelShould = "SHOULD"
	LevelMay    = "MAY"
)

// Verdict classes: what a failed check (a probe or an invariant) means.
// ClassDoubleExecution and ClassBrokenReplay fail the run with exit 1,
// ClassDeviation with exit 6 (1 under Spec.Strict); a warning fails
// nothing.
const (
	// ClassDoubleExecution: an operation ran more than once for one key
	// (I1, or the racing probe's copies).
	ClassDoubleExecution = "double execution"
	// ClassBrokenReplay: an answer for a key differs from its first answer
	// (I3, the replay probe).
	ClassBrokenReplay = "broken replay"
	// ClassInvariant: another safety invariant broken (I2, I4 to I8).
	ClassInvariant = "invariant violation"
	// ClassDeviation: a MUST of the draft or of the declared profile is
	// not kept.
	ClassDeviation = "protocol deviation"
	// ClassWarning: a SHOULD or a MAY is not kept.
	ClassWarning = "warning"
)

// ProbeResult is one line of the conformance table.
type ProbeResult struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Section  string `json:"section"`
	Expected string `json:"expected"`
	Observed string `json:"observed"`
	Status   string `json:"status"`
	// Level is the requirement level of the check that failed or warned,
	// "" on a pass or a skip.
	Level string `json:"level,omitempty"`
	// Class is the verdict class of a failure or warning (ClassDeviation,
	// ClassWarning, ...), "" on a pass or a skip.
	Class string `json:"class,omitempty"`
	// Reason is the target's reason for a declared deviation.
	Reason string `json:"reason,omitempty"`
	// SpreadMs is, for the concurrent-duplicate probe, how far apart its
	// copies left (the first to the last, in milliseconds).
	SpreadMs float64 `json:"spread_ms,omitempty"`
}

// finding is what one probe observed.
type finding struct {
	status, level, class, observed string
	spreadMs                       float64
}

func passed(obs string) finding  { return finding{status: ProbePass, observed: obs} }
func skipped(obs string) finding { return finding{status: ProbeSkipped, observed: obs} }

// broke is a failed expectation of level: a MUST fails as a protocol
// deviation, a SHOULD or MAY warns.
func broke(level, obs string) finding {
	if level == LevelMust {
		return finding{status: ProbeFail, level: level, class: ClassDeviation, observed: obs}
	}
	return finding{status: ProbeWarn, level: level, class: ClassWarning, observed: obs}
}

func doubled(obs string) finding {
	return finding{status: ProbeFail, level: LevelMust, class: ClassDoubleExecution, observed: obs}
}

func brokenReplay(obs string) finding {
	return finding{status: ProbeFail, level: LevelMust, class: ClassBrokenReplay, observed: obs}
}

// prober runs the conformance probes against the service.
type prober struct {
	t      *Target
	client *http.Client
	base   string
	ds     *Downstream
	svc    *Fields
	seed   int64
	prefix string
}

type probeInfo struct{ title, section, expected string }

// info returns the title, draft section and expectation of probe id under
// profile.
func info(id, profile string) probeInfo {
	switch id {
	case ProbeMissingKey:
		return probeInfo{"request without the key", "§2.7", "the declared missing-key status (400) [SHOULD; MAY under stripe]"}
	case ProbeMismatch:
		return probeInfo{"same key, different body", "§2.7", "the declared mismatch status (422) [SHOULD]; never the first request's answer [MUST]"}
	case ProbeConcurrent:
		return probeInfo{"concurrent duplicate (racing copies)", "§2.7", "one execution [MUST]; the others 409 [SHOULD] with Retry-After [MAY], or a wait then the same answer"}
	case ProbeReplay:
		return probeInfo{"replay of a completed request", "§2.6", "same status, byte-identical body [MUST]; the same Location, ETag and Content-Type, the declared replay marker [SHOULD]"}
	case ProbeErrorStored:
		switch profile {
		case ProfileStripe:
			return probeInfo{"error policy (stripe: errors stored)", "§2.6", "after a 5xx the retry gets the same 5xx, byte-identical, without executing [MUST]"}
		case ProfileCache2xx:
			return probeInfo{"error policy (cache-2xx-only)", "§2.6", "after a 5xx the retry executes [MUST]"}
		}
		return probeInfo{"error policy (ietf)", "§2.6", "after a 5xx the retry gets the same 5xx, or executes (the draft leaves it open) [MAY]"}
	case ProbeIsolation:
		return probeInfo{"same key on another path or tenant", "§2.2", "isolated: a fresh execution, not a replay or a mismatch [MUST]"}
	}
	return probeInfo{}
}

// run runs every probe and returns the table, in ProbeIDs order.
func (p *prober) run(ctx context.Context) []ProbeResult {
	fns := map[string]func(context.Context) finding{
		ProbeMissingKey:  p.missingKey,
		ProbeMismatch:    p.mismatch,
		ProbeConcurrent:  p.concurrent,
		ProbeReplay:      p.replay,
		ProbeErrorStored: p.errorStored,
		ProbeIsolation:   p.isolation,
	}
	c := &p.t.Conformance
	var out []ProbeResult
	for _, id := range ProbeIDs {
		in := info(id, c.Profile)
		r := ProbeResult{ID: id, Title: in.title, Section: Draft + " " + in.section, Expected: in.expected}
		f := fns[id](ctx)
		if lv, ok := c.Levels[id]; ok && (f.class == ClassDeviation || f.class == ClassWarning) {
			f = broke(lv, f.observed)
		}
		r.Status, r.Level, r.Class, r.Observed, r.SpreadMs = f.status, f.level, f.class, f.observed, f.spreadMs
		// A declared deviation excuses a protocol check, never a double
		// execution or a broken replay.
		if reason, ok := c.Deviations[id]; ok && (r.Class == ClassDeviation || r.Class == ClassWarning) {
			r.Status, r.Reason = ProbeDeviation, reason
		}
		out = append(out, r)
	}
	return out
}

// call sends the operation for key (with a mismatching body when mismatch
// is set) to path (the operation's when empty) with extra headers.
func (p *prober) call(ctx context.Context, key string, mismatch bool, path string, extra map[string]string) answer {
	op := &p.t.Operation
	f := op.fields(p.seed, key, 1, mismatch, p.svc)
	r, err := op.build(&f)
	if err != nil {
		return answer{err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return send(ctx, p.client, p.base, &r, op.KeyHeader, key, extra, path, nil)
}

func (p *prober) key(id string) string { return p.prefix + "-" + id }

// describe says what an answer was: its status, and whether the target
// declares it.
func (p *prober) describe(a answer) string {
	if a.err != nil {
		return "no answer (" + a.err.Error() + ")"
	}
	if _, _, declared := p.t.Operation.classify(&a); !declared {
		return fmt.Sprintf("%d (a status the target does not declare)", a.status)
	}
	return strconv.Itoa(a.status)
}

func (p *prober) success(a answer) bool {
	return a.err == nil && slices.Contains(p.t.Operation.Success, a.status)
}

// first sends the first request of probe id, on the probe's key, and
// returns the key and the answer. An answer that is not a success ends
// the probe: ok is false and f is its finding.
func (p *prober) first(ctx context.Context, id string) (key string, a answer, f finding, ok bool) {
	key = p.key(id)
	a = p.call(ctx, key, false, "", nil)
	if !p.success(a) {
		return key, a, broke(LevelShould, "the first request got "+p.describe(a)+", not a success"), false
	}
	return key, a, finding{}, true
}

func (p *prober) missingKey(ctx context.Context) finding {
	a := p.call(ctx, "", false, "", nil)
	st := &p.t.Operation.Statuses
	if a.err == nil && slices.Contains(st.MissingKey, a.status) {
		return passed(strconv.Itoa(a.status))
	}
	level := LevelShould
	if p.t.Conformance.Profile == ProfileStripe {
		level = LevelMay // Stripe executes a request without a key
	}
	obs := p.describe(a)
	if p.success(a) {
		obs += ": executed without a key"
	}
	return broke(level, obs)
}

func (p *prober) mismatch(ctx context.Context) finding {
	k, a1, f, ok := p.first(ctx, ProbeMismatch)
	if !ok {
		return f
	}
	a := p.call(ctx, k, true, "", nil)
	op := &p.t.Operation
	if a.err == nil && slices.Contains(op.Statuses.Mismatch, a.status) {
		return passed(strconv.Itoa(a.status))
	}
	obs := p.describe(a)
	if p.success(a) && (op.isReplay(a.header) || (a.status == a1.status && bytes.Equal(a.body, a1.body))) {
		return broke(LevelMust, obs+", the first request's answer: a different request was answered as a replay")
	}
	return broke(LevelShould, obs)
}

// The racing probe sends raceRounds rounds of racers copies of a request,
// each round with a fresh key, the copies of a round released together by
// a barrier. A round whose copies left more than raceSpread apart (the
// machine was busy) and found nothing is sent again, at most raceRounds
// times in all. A correct claim passes every round; a claim with a gap (a
// GET then a SET) fails as soon as one round lands in it.
const (
	racers     = 4
	raceRounds = 8
	raceSpread = time.Millisecond
	// raceHold delays the downstream's answer to a round's first
	// execution, so that the other copies arrive while it runs.
	raceHold = 20 * time.Millisecond
)

func (p *prober) concurrent(ctx context.Context) finding {
	p.warm(ctx)
	return raceRoundsOf(ctx, p.key(ProbeConcurrent), p.race)
}

// raceRoundsOf runs round (one barrier-released round on a fresh key) until
// raceRounds rounds are judged: a passing round whose copies left more than
// raceSpread apart is not judged and is sent again; a failing one counts
// whatever its spread.
func raceRoundsOf(ctx context.Context, key string, round func(context.Context, string) finding) finding {
	var f finding
	judged, loose, worst := 0, 0, 0.0
	for try := 0; judged < raceRounds && try < 2*raceRounds && ctx.Err() == nil; try++ {
		f = round(ctx, key+"-"+strconv.Itoa(try))
		if f.status == ProbePass && time.Duration(f.spreadMs*float64(time.Millisecond)) > raceSpread {
			loose++
			continue
		}
		judged++
		worst = max(worst, f.spreadMs)
		if f.status != ProbePass {
			f.observed = fmt.Sprintf("round %d: %s", judged, f.observed)
			return f
		}
	}
	f.spreadMs = worst
	_, last, _ := strings.Cut(f.observed, ": ")
	f.observed = fmt.Sprintf("%d rounds of %d copies, each within %.3f ms: one execution each (last round: %s)", judged, racers, worst, last)
	if loose > 0 {
		f.observed += fmt.Sprintf("; %d round(s) whose copies left more than %s apart were sent again", loose, raceSpread)
	}
	if judged < raceRounds {
		f = broke(LevelShould, fmt.Sprintf("%s; only %d of %d rounds raced within %s", f.observed, judged, raceRounds, raceSpread))
		f.spreadMs = worst
	}
	return f
}

// warm opens racers connections to the service, so that the racing copies
// do not wait for a dial each.
func (p *prober) warm(ctx context.Context) {
	var wg sync.WaitGroup
	for range racers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base, nil)
			if err != nil {
				return
			}
			if resp, err := p.client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
}

// race sends racers copies of one request with key k, released together
// by a barrier, and judges what came back.
func (p *prober) race(ctx context.Context, k string) finding {
	if p.ds != nil {
		p.ds.Hold(k, raceHold)
	}
	op := &p.t.Operation
	f := op.fields(p.seed, k, 1, false, p.svc)
	r, err := op.build(&f)
	if err != nil {
		return broke(LevelShould, err.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	answers := make([]answer, racers)
	left := make([]time.Time, racers)
	barrier := make(chan struct{})
	var ready, wg sync.WaitGroup
	ready.Add(racers)
	for i := range racers {
		wg.Go(func() {
			ready.Done()
			<-barrier
			left[i] = time.Now()
			answers[i] = send(ctx, p.client, p.base, &r, op.KeyHeader, k, nil, "", nil)
		})
	}
	ready.Wait()
	close(barrier)
	wg.Wait()
	first, last := left[0], left[0]
	for _, t := range left[1:] {
		if t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	spread := float64(last.Sub(first).Microseconds()) / 1000
	res := p.judgeRace(k, answers, spread)
	res.spreadMs = spread
	return res
}

// judgeRace judges the answers of racing copies of key k.
func (p *prober) judgeRace(k string, answers []answer, spreadMs float64) finding {
	op := &p.t.Operation
	var executed, conflicts, replays, noRetryAfter int
	var first *answer
	var other []string
	for i := range answers {
		if p.success(answers[i]) && !op.isReplay(answers[i].header) && first == nil {
			first = &answers[i]
		}
	}
	for i := range answers {
		a := &answers[i]
		switch {
		case a.err == nil && (slices.Contains(op.Statuses.InProgress, a.status) || slices.Contains(op.Statuses.Conflict, a.status)):
			conflicts++
			if a.retryAfter == "" {
				noRetryAfter++
			}
		case p.success(*a) && op.isReplay(a.header):
			replays++
		case p.success(*a) && a != first && first != nil && op.replayName == "" && a.status == first.status && bytes.Equal(a.body, first.body):
			replays++ // no marker declared: an identical answer is taken as a replay
		case p.success(*a):
			executed++
		default:
			other = append(other, fmt.Sprintf("copy %d got %s", i+1, p.describe(*a)))
		}
	}
	obs := fmt.Sprintf("%d copies left within %.3f ms: %d executed, %d got in-progress, %d replayed", len(answers), spreadMs, executed, conflicts, replays)
	if len(other) > 0 {
		obs += "; " + strings.Join(other, ", ")
	}
	if p.ds != nil {
		if c := p.ds.Applied(k); c > 1 {
			return doubled(fmt.Sprintf("%s; the downstream was charged %d times for one key", obs, c))
		}
	}
	switch {
	case executed > 1:
		return doubled(obs)
	case len(other) > 0:
		return broke(LevelShould, obs)
	case executed == 0 && replays == 0:
		return broke(LevelShould, obs+"; no copy succeeded")
	case noRetryAfter > 0:
		return broke(LevelMay, fmt.Sprintf("%s; %d in-progress answer(s) without Retry-After", obs, noRetryAfter))
	}
	return passed(obs)
}

func (p *prober) replay(ctx context.Context) finding {
	k, a1, f, ok := p.first(ctx, ProbeReplay)
	if !ok {
		return f
	}
	a2 := p.call(ctx, k, false, "", nil)
	op := &p.t.Operation
	switch {
	case a2.err == nil && (slices.Contains(op.Statuses.InProgress, a2.status) || slices.Contains(op.Statuses.Retry, a2.status)):
		return broke(LevelShould, "the retry after the first answer got "+p.describe(a2)+", not a replay")
	case a2.err != nil || a2.status != a1.status:
		return brokenReplay("the retry got " + p.describe(a2) + fmt.Sprintf(", the first %d", a1.status))
	case !bytes.Equal(a1.body, a2.body):
		return brokenReplay("the retry's body differs from the first answer's")
	case len(headerDiffs(a1.header, a2.header)) > 0:
		return broke(LevelShould, "byte-identical body, but "+strings.Join(headerDiffs(a1.header, a2.header), "; "))
	case op.replayName == "":
		return passed("byte-identical (no replay marker declared)")
	case !op.isReplay(a2.header):
		return broke(LevelShould, "byte-identical, but without the replay marker "+op.ReplayHeader)
	case op.isReplay(a1.header):
		return broke(LevelShould, "the first answer already carries the replay marker")
	}
	return passed("byte-identical, with the replay marker")
}

// replayHeaders are the headers a replay must repeat byte for byte.
var replayHeaders = []string{"Location", "Etag", "Content-Type"}

// headerDiffs says which of replayHeaders differ between a first answer
// and its replay.
func headerDiffs(first, replay http.Header) []string {
	var out []string
	for _, h := range replayHeaders {
		a, b := strings.Join(first.Values(h), ", "), strings.Join(replay.Values(h), ", ")
		if a != b {
			out = append(out, fmt.Sprintf("%s %q on the replay, %q first", http.CanonicalHeaderKey(h), b, a))
		}
	}
	return out
}

func (p *prober) errorStored(ctx context.Context) finding {
	if p.ds == nil {
		return skipped("needs the downstream oracle to make the service fail")
	}
	k := p.key(ProbeErrorStored)
	p.ds.FailNext(k, http.StatusServiceUnavailable)
	a1 := p.call(ctx, k, false, "", nil)
	if a1.err != nil || a1.status < 500 {
		return skipped("a failing downstream did not make the service answer 5xx (it answered " + p.describe(a1) + ")")
	}
	calls := p.ds.Applied(k)
	a2 := p.call(ctx, k, false, "", nil)
	op := &p.t.Operation
	executed := p.success(a2) && !op.isReplay(a2.header) && p.ds.Applied(k) > calls
	stored := a2.err == nil && a2.status == a1.status && bytes.Equal(a1.body, a2.body) && p.ds.Applied(k) == calls
	var obs string
	switch {
	case stored:
		obs = fmt.Sprintf("%d, then the retry got the same %d without executing: stored", a1.status, a2.status)
	case executed:
		obs = fmt.Sprintf("%d, then the retry executed (%d): not stored", a1.status, a2.status)
	case p.success(a2):
		obs = fmt.Sprintf("%d, then the retry got %d marked as a replay", a1.status, a2.status)
	default:
		obs = fmt.Sprintf("%d, then the retry got %s", a1.status, p.describe(a2))
	}
	switch profile := p.t.Conformance.Profile; {
	case profile == ProfileStripe && !stored:
		return broke(LevelMust, obs+"; the stripe profile stores errors")
	case profile == ProfileCache2xx && !executed:
		return broke(LevelMust, obs+"; the cache-2xx-only profile stores successes only")
	case !stored && !executed:
		return broke(LevelMay, obs)
	}
	return passed(obs)
}

func (p *prober) isolation(ctx context.Context) finding {
	c := &p.t.Conformance
	if c.IsolationPath == "" && len(c.IsolationHeaders) == 0 {
		return skipped("no isolation_path or isolation_headers declared")
	}
	k, a1, f, ok := p.first(ctx, ProbeIsolation)
	if !ok {
		return f
	}
	a2 := p.call(ctx, k, false, c.IsolationPath, c.IsolationHeaders)
	op := &p.t.Operation
	switch {
	case a2.err == nil && slices.Contains(op.Statuses.Mismatch, a2.status):
		return broke(LevelMust, p.describe(a2)+": the key is shared with the first path or tenant")
	case !p.success(a2):
		return broke(LevelShould, "the second request got "+p.describe(a2))
	case op.isReplay(a2.header):
		return broke(LevelMust, "a replay of the first path's or tenant's answer")
	case op.ResourceID != "" && op.resourceID(&a1) == op.resourceID(&a2):
		return broke(LevelMust, "the same resource id as the first answer")
	case op.ResourceID == "" && bytes.Equal(a1.body, a2.body):
		return broke(LevelMust, "the same body as the first answer")
	}
	return passed(fmt.Sprintf("a fresh execution (%d)", a2.status))
}
