package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/idembench/idembench/idem"
)

func list(ctx context.Context, e *env, args []string) (int, error) {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	stuck := fs.Bool("stuck", false, "")
	corrupt := fs.Bool("corrupt", false, "")
	uncertain := fs.Bool("uncertain", false, "")
	older := fs.Duration("older-than", 0, "")
	limit := fs.Int("limit", idem.DefaultListLimit, "")
	pos, err := subFlags(fs, args)
	switch {
	case err != nil || len(pos) != 0:
		return usageError(err, usageList)
	case count(*stuck, *corrupt, *uncertain) != 1:
		return usageError(errors.New("give one of --stuck, --corrupt and --uncertain"), usageList)
	case *older < 0:
		return usageError(fmt.Errorf("--older-than %v is negative", *older), usageList)
	case *limit < 1:
		return usageError(fmt.Errorf("--limit %d: want at least 1", *limit), usageList)
	case !*stuck && *older != 0:
		return usageError(errors.New("--older-than applies to --stuck only"), usageList)
	case *corrupt:
		return listCorrupt(ctx, e, *limit)
	case *uncertain:
		return listUncertain(ctx, e, *limit)
	}
	recs, err := listStuck(ctx, e, *older, *limit)
	if err != nil {
		return storeErr(err)
	}
	printRecords(e, recs, "stuck keys", func(r *idem.Record, now time.Time) string {
		return fmt.Sprintf("token %d\tlease expired %s ago", r.Token, now.Sub(r.LeaseExpiry).Round(time.Millisecond))
	})
	return exitOK, nil
}

// printRecords prints recs, what they are in the count line above them,
// and each one's name and detail (as of now) a line.
func printRecords(e *env, recs []*idem.Record, what string, detail func(r *idem.Record, now time.Time) string) {
	now := time.Now()
	out := make([]recordJSON, 0, len(recs))
	lines := []string{fmt.Sprintf("%d %s", len(recs), what)}
	for _, r := range recs {
		name := nameOf(r.Key)
		out = append(out, toJSON(name, r, now))
		lines = append(lines, name.column()+"\t"+detail(r, now))
	}
	e.out.print(out, lines...)
}

// listStuck lists the stuck keys, of --scope only when it is set.
func listStuck(ctx context.Context, e *env, older time.Duration, limit int) ([]*idem.Record, error) {
	if prefix := e.scopePrefix(); prefix != "" {
		pl, ok := e.store.(idem.PrefixLister)
		if !ok {
			return nil, errors.New("the store cannot list the keys of one scope")
		}
		return pl.ListStuckPrefix(ctx, prefix, older, limit)
	}
	lister, ok := e.store.(idem.Lister)
	if !ok {
		return nil, errors.New("the store cannot list keys")
	}
	return lister.ListStuck(ctx, older, limit)
}

// count returns how many of flags are set.
func count(flags ...bool) int {
	n := 0
	for _, f := range flags {
		if f {
			n++
		}
	}
	return n
}

// listUncertain lists the uncertain keys, of --scope only when it is set,
// with the token idemctl resolve needs.
func listUncertain(ctx context.Context, e *env, limit int) (int, error) {
	ul, ok := e.store.(idem.UncertainLister)
	if !ok {
		return exitBackend, errors.New("the store cannot list uncertain records")
	}
	recs, err := ul.ListUncertain(ctx, e.scopePrefix(), limit)
	if err != nil {
		return storeErr(err)
	}
	printRecords(e, recs, "uncertain keys", func(r *idem.Record, _ time.Time) string {
		return fmt.Sprintf("token %d\tkept until %s", r.Token, r.ExpiresAt.UTC().Format(time.RFC3339))
	})
	return exitOK, nil
}

func listCorrupt(ctx context.Context, e *env, limit int) (int, error) {
	cl, ok := e.store.(idem.CorruptLister)
	if !ok {
		return exitBackend, errors.New("the store cannot list corrupt records")
	}
	recs, err := cl.ListCorrupt(ctx, e.scopePrefix(), limit)
	if err != nil {
		return storeErr(err)
	}
	out := make([]corruptJSON, 0, len(recs))
	lines := []string{fmt.Sprintf("%d corrupt records", len(recs))}
	for _, r := range recs {
		name := nameOf(r.Key)
		out = append(out, toCorruptJSON(name, r))
		lines = append(lines, fmt.Sprintf("%s\tdigest %s\t%s", name.column(), r.Digest, r.Reason))
	}
	e.out.print(out, lines...)
	return exitOK, nil
}
