package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/idembench/idembench/idem"
)

// recordJSON is a record as inspect and list print it.
type recordJSON struct {
	keyName
	Status         string     `json:"status"`
	Token          idem.Token `json:"token"`
	Fingerprint    string     `json:"fingerprint"`
	LeaseExpiry    *time.Time `json:"lease_expiry,omitempty"`
	LeaseExpiredMS int64      `json:"lease_expired_ms,omitempty"` // how long ago, when expired
	ExpiresAt      *time.Time `json:"expires_at,omitempty"`
	ResponseStatus int        `json:"response_status,omitempty"`
	ResponseBytes  int        `json:"response_bytes,omitempty"`
}

func toJSON(name keyName, r *idem.Record, now time.Time) recordJSON {
	j := recordJSON{keyName: name, Status: r.Status.String(), Token: r.Token, Fingerprint: r.Fingerprint.String()}
	if !r.LeaseExpiry.IsZero() {
		t := r.LeaseExpiry.UTC()
		j.LeaseExpiry = &t
		if now.After(t) {
			j.LeaseExpiredMS = now.Sub(t).Milliseconds()
		}
	}
	if !r.ExpiresAt.IsZero() {
		t := r.ExpiresAt.UTC()
		j.ExpiresAt = &t
	}
	if r.Response != nil {
		j.ResponseStatus, j.ResponseBytes = r.Response.Status, r.Response.Size()
	}
	return j
}

// nameLines are the first lines of inspect: the key, its scope and the
// stored key when they differ from the key.
func nameLines(name keyName) []string {
	lines := []string{"key:          " + name.Key}
	if name.Scope != "" {
		lines = append(lines, "scope:        "+name.Scope)
	}
	if name.Stored != name.Key {
		lines = append(lines, "stored key:   "+name.Stored)
	}
	return lines
}

func inspect(ctx context.Context, e *env, args []string) (int, error) {
	pos, err := subFlags(flag.NewFlagSet("inspect", flag.ContinueOnError), args)
	if err != nil || len(pos) != 1 {
		return usageError(err, usageInspect)
	}
	name, err := e.storageKey(pos[0])
	if err != nil {
		return exitUsage, err
	}
	rec, err := e.store.Get(ctx, name.Stored)
	for attempt := 1; errors.Is(err, idem.ErrCorruptRecord); attempt++ {
		code, showErr := showCorrupt(ctx, e, name, err)
		if !errors.Is(showErr, errChangedMeanwhile) || attempt == 3 {
			return code, showErr
		}
		rec, err = e.store.Get(ctx, name.Stored)
	}
	if err != nil {
		return storeErr(err)
	}
	now := time.Now()
	lines := append(nameLines(name),
		"status:       "+rec.Status.String(),
		"token:        "+strconv.FormatUint(uint64(rec.Token), 10),
		"fingerprint:  "+rec.Fingerprint.String())
	if rec.Status == idem.StatusInProgress {
		live := "expired: stuck, a retry or the completer takes it over"
		if rec.LeaseLive(now) {
			live = "live: a holder is executing"
		}
		lines = append(lines, "lease expiry: "+ago(rec.LeaseExpiry, now)+", "+live)
	}
	if rec.Status == idem.StatusUncertain {
		lines = append(lines, fmt.Sprintf("uncertain:    the effect may or may not have happened; settle it with "+
			"resolve %s --token %d (--applied RESPONSE | --not-applied)", name.Key, rec.Token))
	}
	if rec.Response != nil {
		lines = append(lines, fmt.Sprintf("response:     status %d, %d bytes", rec.Response.Status, rec.Response.Size()))
	}
	lines = append(lines, "expires at:   "+ago(rec.ExpiresAt, now))
	e.out.print(toJSON(name, rec, now), lines...)
	return exitOK, nil
}

// releaseJSON is the result of release.
type releaseJSON struct {
	keyName
	Token    idem.Token `json:"token"`
	Released bool       `json:"released"`
	refusal
}

// refusal is why idemctl refused a release or a resolve, with the record's
// current token and status (omitted when it has none).
type refusal struct {
	Reason  string      `json:"reason,omitempty"`
	Current *idem.Token `json:"current_token,omitempty"`
	Status  string      `json:"current_status,omitempty"`
}

// refuse records reason and rec (nil: no record) in r, prints res, the
// result holding r, once on stdout (as JSON with --json) and returns
// exitRefused.
func (r *refusal) refuse(e *env, res any, reason string, rec *idem.Record) (int, error) {
	r.Reason = reason
	if rec != nil {
		r.Current, r.Status = &rec.Token, rec.Status.String()
	}
	e.out.print(res, "refused: "+reason)
	return exitRefused, nil
}

func release(ctx context.Context, e *env, args []string) (int, error) {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	token := fs.Uint64("token", 0, "")
	force := fs.Bool("force", false, "")
	pos, err := subFlags(fs, args)
	if err != nil || len(pos) != 1 || *token == 0 {
		return usageError(err, usageRelease)
	}
	name, err := e.storageKey(pos[0])
	if err != nil {
		return exitUsage, err
	}
	res := releaseJSON{keyName: name, Token: idem.Token(*token)}
	refuse := func(reason string, rec *idem.Record) (int, error) { return res.refuse(e, &res, reason, rec) }
	rec, err := e.store.Get(ctx, name.Stored)
	if err != nil {
		return storeErr(err)
	}
	if rec.Token != res.Token || rec.Status != idem.StatusInProgress {
		return refuse(fmt.Sprintf("the token moved: %s is %s with token %d, not in progress with token %d",
			name, rec.Status, rec.Token, res.Token), rec)
	}
	if rec.LeaseLive(time.Now()) && !*force {
		return refuse(fmt.Sprintf("the lease of token %d is live until %s: a holder may be executing; use --force to release it anyway",
			res.Token, rec.LeaseExpiry.UTC().Format(time.RFC3339Nano)), rec)
	}
	err = e.store.Release(ctx, &idem.Lease{Key: name.Stored, Token: res.Token, Fingerprint: rec.Fingerprint})
	if errors.Is(err, idem.ErrLeaseLost) {
		cur, _ := e.store.Get(ctx, name.Stored)
		return refuse(fmt.Sprintf("the token moved: %s no longer carries token %d", name, res.Token), cur)
	}
	if err != nil {
		return storeErr(err)
	}
	res.Released = true
	e.out.print(res, fmt.Sprintf("released %s (token %d); the next request with this key runs as new", name, res.Token))
	return exitOK, nil
}

func stats(ctx context.Context, e *env, args []string) (int, error) {
	if pos, err := subFlags(flag.NewFlagSet("stats", flag.ContinueOnError), args); err != nil || len(pos) != 0 {
		return usageError(err, usageStats)
	}
	statter, ok := e.store.(idem.Statter)
	if !ok {
		return exitBackend, errors.New("the store cannot count records")
	}
	st, err := statter.Stats(ctx)
	if err != nil {
		return storeErr(err)
	}
	e.out.print(map[string]int64{
		"in_progress": st.InProgress, "stuck": st.Stuck, "completed": st.Completed,
		"failed": st.Failed, "uncertain": st.Uncertain, "corrupt": st.Corrupt, "bytes": st.Bytes,
	},
		fmt.Sprintf("in_progress %d (stuck %d)", st.InProgress, st.Stuck),
		fmt.Sprintf("completed   %d", st.Completed),
		fmt.Sprintf("failed      %d", st.Failed),
		fmt.Sprintf("uncertain   %d", st.Uncertain),
		fmt.Sprintf("corrupt     %d", st.Corrupt),
		fmt.Sprintf("bytes       %d", st.Bytes))
	return exitOK, nil
}

func purge(ctx context.Context, e *env, args []string) (int, error) {
	fs := flag.NewFlagSet("purge", flag.ContinueOnError)
	expired := fs.Bool("expired", false, "")
	if pos, err := subFlags(fs, args); err != nil || len(pos) != 0 || !*expired {
		return usageError(err, usagePurge)
	}
	sweeper, ok := e.store.(idem.Sweeper)
	if !ok {
		e.out.print(map[string]any{"removed": 0, "note": "the store expires records itself"},
			"nothing to purge: the store expires its records itself (Redis TTLs)")
		return exitOK, nil
	}
	n, err := sweeper.Sweep(ctx)
	if err != nil {
		return storeErr(err)
	}
	e.out.print(map[string]int{"removed": n}, fmt.Sprintf("removed %d expired records", n))
	return exitOK, nil
}
