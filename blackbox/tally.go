package blackbox

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// sampleLen bounds the body shown in a sample answer, in bytes.
const sampleLen = 120

// answerTally counts the answers of a run that were not successes, by
// status (0 for no answer), and keeps the first answer of each status, so
// that a run in which nothing succeeded can say what the service answered.
type answerTally struct {
	mu      sync.Mutex
	counts  map[int]int
	samples map[int]string
	// undeclared counts the answers whose status the target does not
	// declare (see Statuses).
	undeclared map[int]int
}

func newAnswerTally() *answerTally {
	return &answerTally{counts: map[int]int{}, samples: map[int]string{}, undeclared: map[int]int{}}
}

// add counts a, an answer that was not a success; declared says whether
// the target declares its status.
func (t *answerTally) add(a *answer, declared bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.counts[a.status]++
	if !declared {
		t.undeclared[a.status]++
	}
	if _, ok := t.samples[a.status]; ok {
		return
	}
	if a.err != nil {
		t.samples[a.status] = "no answer: " + a.err.Error()
		return
	}
	body := a.body
	more := ""
	if len(body) > sampleLen {
		body, more = body[:sampleLen], "…"
	}
	t.samples[a.status] = strconv.Itoa(a.status) + " " + strconv.Quote(string(body)) + more
}

// noSuccess returns the ErrNoSuccess error of a run whose answers t
// counted: ErrUsage when every answer that came back refused the request
// (attempts without an answer aside), else ErrEnvironment. base is where
// the requests went.
func (t *answerTally) noSuccess(base string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	statuses := make([]int, 0, len(t.counts))
	answered, refused := false, true
	for s := range t.counts {
		statuses = append(statuses, s)
		if s != 0 { // no answer (a timeout, a reset) says nothing either way
			answered = true
			refused = refused && refuses(s)
		}
	}
	slices.SortFunc(statuses, func(a, b int) int {
		return cmp.Or(cmp.Compare(t.counts[b], t.counts[a]), cmp.Compare(a, b))
	})
	var parts []string
	for _, s := range statuses {
		name := strconv.Itoa(s)
		if s == 0 {
			name = "no answer"
		}
		parts = append(parts, fmt.Sprintf("%s × %d", name, t.counts[s]))
	}
	what := strings.Join(parts, ", ")
	if len(statuses) > 0 {
		sample := statuses[0]
		if i := slices.IndexFunc(statuses, func(s int) bool { return s != 0 }); i >= 0 {
			sample = statuses[i] // an answer tells more than a timeout
		}
		what += ", sample response: " + t.samples[sample]
	}
	if answered && refused {
		return &noSuccessError{class: ErrUsage, msg: fmt.Sprintf("%v (%s): the service at %s refuses the request the target file describes; check its operation (method, path, headers, body, key_header) and success statuses",
			ErrNoSuccess, what, base)}
	}
	return &noSuccessError{class: ErrEnvironment, msg: fmt.Sprintf("%v (%s): the service at %s does not perform the operation, so there is nothing to check",
		ErrNoSuccess, what, base)}
}

// noSuccessError is an ErrNoSuccess error of exit class class (ErrUsage
// or ErrEnvironment), whose message does not repeat the class.
type noSuccessError struct {
	class error
	msg   string
}

func (e *noSuccessError) Error() string   { return e.msg }
func (e *noSuccessError) Unwrap() []error { return []error{e.class, ErrNoSuccess} }

// refuses reports whether status says the request itself is refused (a
// client error about the request), not that the service is busy or
// unwell: a 4xx other than 408 Request Timeout, 409 Conflict (a request in
// progress) and 429 Too Many Requests.
func refuses(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return false
	}
	return status >= 400 && status <= 499
}

// undeclaredNote returns the note of a run that got statuses its target
// does not declare, "" when there were none: which, how often, one
// answer each, and what to declare.
func (t *answerTally) undeclaredNote() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.undeclared) == 0 {
		return ""
	}
	statuses := slices.Sorted(maps.Keys(t.undeclared))
	var parts []string
	for _, s := range statuses {
		parts = append(parts, fmt.Sprintf("%d × %d (%s)", s, t.undeclared[s], t.samples[s]))
	}
	return fmt.Sprintf("undeclared status: %s; the target does not say what it means, so these answers count as unknown outcomes "+
		"(they may or may not have executed) and are not judged; declare it in operation.success, mismatch_status, "+
		"in_progress_status, conflict_status, missing_key_status, retry_status or failed_status", strings.Join(parts, ", "))
}
