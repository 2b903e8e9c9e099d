package naive

import (
	"context"
	"errors"
	"time"

	"github.com/idembench/idembench/idem"
)

// UnfencedCompleterRetention is how long UnfencedCompleter keeps the
// answers it stores.
const UnfencedCompleterRetention = time.Hour

// UnfencedCompleter is a known-bad completer: one pass over the stuck keys
// of st (idem.Lister) that finishes each one under the crashed holder's own
// token instead of taking it over, after looking for its effect with look,
// which does not fence. It completes the key with look's response when the
// effect happened, and releases it otherwise.
//
// Its flaw: a holder that was only paused past its lease is not fenced out.
// When the look comes before the holder's effect, the key is released
// while the holder goes on to apply the effect; the client's eventual
// retry then finds the key absent and applies it again (I1). The reference
// completer (idem.Engine.RecoverAbandoned) takes the key over with a
// higher token and asks a recovery hook that fences the effect first. The
// harness runs it as the engine "naive/unfenced-completer", and
// backends/storetest's Admin requires its completer case to catch it.
//
// It returns idem.ErrNoLister when st cannot list stuck keys, the listing
// error, or the joined errors of the writes that failed other than by
// fencing.
func UnfencedCompleter(ctx context.Context, st idem.Store, look func(key string) (idem.Response, bool)) error {
	lister, ok := st.(idem.Lister)
	if !ok {
		return idem.ErrNoLister
	}
	recs, err := lister.ListStuck(ctx, 0, 0)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range recs {
		l := &idem.Lease{Key: r.Key, Token: r.Token, Fingerprint: r.Fingerprint, Expiry: r.LeaseExpiry}
		if resp, done := look(r.Key); done {
			err = st.Complete(ctx, l, resp, UnfencedCompleterRetention)
		} else {
			err = st.Release(ctx, l)
		}
		if err != nil && !errors.Is(err, idem.ErrLeaseLost) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
