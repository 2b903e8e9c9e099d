package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/idembench/idembench/idem"
)

// batchAgreesWithSingle runs one script of claims and fenced writes twice,
// on two sets of keys: once through Acquire, Complete, Fail and Release,
// once through the idem.BatchStore methods, and fails when the two paths
// answer differently or leave different records behind. Optional
// interfaces are found by type assertion, so a wrapper that embeds a
// batch store and overrides a single method (Release, say) keeps the
// embedded batch methods: Engine.DoBatch then never calls the override.
// This case shows it. A store without idem.BatchStore has one path: the
// case skips.
func batchAgreesWithSingle(t testing.TB, s *suite, st idem.Store, key string) {
	bs, ok := st.(idem.BatchStore)
	if !ok {
		t.Skipf("%T does not implement idem.BatchStore: one path, nothing to compare", st)
	}
	single := pathScript(t, st, key+".single", singlePath{st})
	batch := pathScript(t, st, key+".batch", batchPath{bs})
	for i := range single {
		if single[i] != batch[i] {
			t.Errorf("%T: the batch path and the single path disagree on %s: single %s, batch %s "+
				"(a wrapper that embeds a batch store keeps its batch methods: override them too, or embed idem.Store to hide them)",
				st, pathSteps[i], single[i], batch[i])
		}
	}
}

// pathSteps names what pathScript observes, in order.
var pathSteps = []string{
	"claim of new keys", "complete", "fail", "release", "stale release after complete",
	"record after complete", "record after fail", "record after release", "claim after release",
}

// writePath is one way to make the script's writes.
type writePath interface {
	claim(t testing.TB, keys []string) []*idem.Lease
	finish(fs []idem.Finish) []error
}

type singlePath struct{ st idem.Store }

func (p singlePath) claim(t testing.TB, keys []string) []*idem.Lease {
	ls := make([]*idem.Lease, len(keys))
	for i, k := range keys {
		l, rec, err := p.st.Acquire(bg(), k, fp("a"), long)
		if err != nil || l == nil || rec != nil {
			t.Fatalf("Acquire(%q): lease %+v, record %+v, err %v; want a lease", k, l, rec, err)
		}
		ls[i] = l
	}
	return ls
}

func (p singlePath) finish(fs []idem.Finish) []error {
	errs := make([]error, len(fs))
	for i, f := range fs {
		switch f.Kind {
		case idem.FinishComplete:
			errs[i] = p.st.Complete(bg(), f.Lease, f.Response, long)
		case idem.FinishFail:
			errs[i] = p.st.Fail(bg(), f.Lease, f.Response, long)
		case idem.FinishRelease:
			errs[i] = p.st.Release(bg(), f.Lease)
		}
	}
	return errs
}

type batchPath struct{ bs idem.BatchStore }

func (p batchPath) claim(t testing.TB, keys []string) []*idem.Lease {
	reqs := make([]idem.AcquireRequest, len(keys))
	for i, k := range keys {
		reqs[i] = idem.AcquireRequest{Key: k, Fingerprint: fp("a")}
	}
	res := p.bs.AcquireBatch(bg(), reqs, long)
	if len(res) != len(keys) {
		t.Fatalf("AcquireBatch: %d answers for %d keys", len(res), len(keys))
	}
	ls := make([]*idem.Lease, len(keys))
	for i, r := range res {
		if r.Err != nil || r.Lease == nil || r.Record != nil {
			t.Fatalf("AcquireBatch %q: %+v; want a lease", keys[i], r)
		}
		ls[i] = r.Lease
	}
	return ls
}

func (p batchPath) finish(fs []idem.Finish) []error {
	errs := p.bs.FinishBatch(bg(), fs, long)
	if len(errs) != len(fs) {
		errs = make([]error, len(fs))
		for i := range errs {
			errs[i] = fmt.Errorf("FinishBatch gave %d answers for %d writes", len(errs), len(fs))
		}
	}
	return errs
}

// pathScript claims four keys under prefix through p, completes, fails
// and releases three of them, completes the fourth and releases it with
// its now stale lease, and returns what it saw (one line per pathSteps
// entry), reading the records back with Get and Acquire on st.
func pathScript(t testing.TB, st idem.Store, prefix string, p writePath) []string {
	keys := []string{prefix + ".c", prefix + ".f", prefix + ".r", prefix + ".s"}
	ls := p.claim(t, keys)
	out := []string{"leases"}
	for _, l := range ls {
		if l.PrevToken != 0 {
			out[0] = "a take-over of a new key"
		}
	}
	errs := p.finish([]idem.Finish{
		{Kind: idem.FinishComplete, Lease: ls[0], Response: sampleResponse("c")},
		{Kind: idem.FinishFail, Lease: ls[1], Response: sampleResponse("f")},
		{Kind: idem.FinishRelease, Lease: ls[2]},
		{Kind: idem.FinishComplete, Lease: ls[3], Response: sampleResponse("s")},
	})
	out = append(out, writeClass(errs[0]), writeClass(errs[1]), writeClass(errs[2]))
	stale := p.finish([]idem.Finish{{Kind: idem.FinishRelease, Lease: ls[3]}})
	out = append(out, writeClass(stale[0]))
	for _, k := range keys[:3] {
		out = append(out, recordClass(st, k))
	}
	l, rec, err := st.Acquire(bg(), keys[2], fp("a"), long)
	switch {
	case err != nil:
		out = append(out, "error: "+err.Error())
	case l != nil:
		out = append(out, "a lease")
	default:
		out = append(out, "the record "+rec.Status.String())
	}
	return out
}

// errClass describes err by its kind, not its text.
func writeClass(err error) string {
	switch {
	case err == nil:
		return "accepted"
	case errors.Is(err, idem.ErrLeaseLost):
		return "refused (ErrLeaseLost)"
	}
	return "error: " + err.Error()
}

// recordClass describes the record of key: absent, or its status and
// response.
func recordClass(st idem.Store, key string) string {
	rec, err := st.Get(bg(), key)
	switch {
	case errors.Is(err, idem.ErrNotFound):
		return "absent"
	case err != nil:
		return "error: " + err.Error()
	case rec.Response == nil:
		return rec.Status.String()
	}
	return fmt.Sprintf("%s %d %q", rec.Status, rec.Response.Status, rec.Response.Body)
}
