package redisstore

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/idembench/idembench/idem"
)

// TestTakeOverRefusesCorruptIntegers plants in-progress records that would
// be taken over (same fingerprint, lease expired) if their integers were
// read loosely: tokens and lease expiries that Lua's tonumber accepts but
// decodeRecord does not. Before the scripts judged records as Go does, a
// token of "inf", "1e30" or 2^64-1 was taken over and wrote token
// -9223372036854775808 into the record and the slot's counter, so the next
// claim of the slot restarted at 1; "0x10", "5.5" and lease_ms "-100" or
// "1.5" were taken over and executed. Each must now fail closed: Acquire
// returns ErrCorruptRecord, issues no lease, and leaves the record and the
// slot's counter as they were.
func TestTakeOverRefusesCorruptIntegers(t *testing.T) {
	t.Parallel()
	s := newStore(t, newClient(t), Options{})
	ctx := ctxT(t)
	k := keysFor(s.opts.Prefix, "k")
	// A first lease in the slot gives its counter a value to compare with.
	first := mustAcquire(t, s, "k", fpA, longTTL)
	if err := s.Release(ctx, first); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ field, value string }{
		{"token", "inf"}, {"token", "-inf"}, {"token", "nan"}, {"token", "1e30"},
		{"token", "18446744073709551615"}, {"token", "9223372036854775808"},
		{"token", "-9223372036854775808"}, {"token", "0x10"}, {"token", "5.5"},
		{"token", "007"}, {"token", "+5"}, {"token", " 5"}, {"token", "5 "}, {"token", "-5"},
		{"lease_ms", "-100"}, {"lease_ms", "1.5"}, {"lease_ms", "0x10"}, {"lease_ms", "0"},
		{"lease_ms", "1e3"}, {"lease_ms", "+1"},
		{"prev_token", "-1"}, {"prev_token", "abc"}, {"prev_token", "99999"}, {"prev_token", "5"},
		{"fp", strings.ToUpper(fpA.String())},
	}
	for _, c := range cases {
		fields := map[string]string{"status": "in_progress", "fp": fpA.String(), "token": "5", "prev_token": "0", "lease_ms": "1", "acq_id": "x"}
		fields[c.field] = c.value
		if err := s.client.Del(ctx, k.record).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.client.HSet(ctx, k.record, fields).Err(); err != nil {
			t.Fatal(err)
		}
		before, err := s.client.Dump(ctx, k.record).Result()
		if err != nil {
			t.Fatal(err)
		}
		counter, err := s.client.Get(ctx, k.fence()).Int64()
		if err != nil {
			t.Fatal(err)
		}
		l, rec, err := s.Acquire(ctx, "k", fpA, longTTL)
		if !errors.Is(err, idem.ErrCorruptRecord) || l != nil || rec != nil {
			t.Errorf("%s %q: Acquire = %+v, %+v, %v; want ErrCorruptRecord and nothing else", c.field, c.value, l, rec, err)
		}
		if err != nil && !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s %q: error %q does not name the field", c.field, c.value, err)
		}
		if after, _ := s.client.Dump(ctx, k.record).Result(); after != before {
			t.Errorf("%s %q: Acquire changed the record", c.field, c.value)
		}
		if now, _ := s.client.Get(ctx, k.fence()).Int64(); now != counter {
			t.Errorf("%s %q: slot counter %d → %d", c.field, c.value, counter, now)
		}
		// The fenced writes, with the planted token or another, refuse too.
		for _, tok := range []idem.Token{5, first.Token} {
			l := &idem.Lease{Key: "k", Token: tok, Fingerprint: fpA}
			for name, err := range map[string]error{
				"Heartbeat": s.Heartbeat(ctx, l, longTTL),
				"Complete":  s.Complete(ctx, l, resp("x"), longTTL),
				"Release":   s.Release(ctx, l),
			} {
				if !errors.Is(err, idem.ErrCorruptRecord) {
					t.Errorf("%s %q: %s with token %d = %v, want ErrCorruptRecord", c.field, c.value, name, tok, err)
				}
			}
		}
		if after, _ := s.client.Dump(ctx, k.record).Result(); after != before {
			t.Errorf("%s %q: a fenced write changed the record", c.field, c.value)
		}
	}
	// The counter never went backwards: a fresh claim gets a higher token.
	if err := s.client.Del(ctx, k.record).Err(); err != nil {
		t.Fatal(err)
	}
	if l := mustAcquire(t, s, "k", fpA, longTTL); l.Token <= first.Token {
		t.Fatalf("token after the corrupt records = %d, want above %d", l.Token, first.Token)
	}
}

// TestTakeOverAboveLargeTokens takes over valid records whose tokens are
// beyond what a Lua number holds exactly (2^53) and far above the slot's
// counter: the new token is exactly above the old one, the counter moves
// past it, OnCounterBehind reports it, and a token that no counter value can
// exceed within MaxToken fails closed with ErrFenceCounter.
func TestTakeOverAboveLargeTokens(t *testing.T) {
	t.Parallel()
	type behind struct {
		key     string
		counter int64
		prev    idem.Token
	}
	var seen []behind
	s := newStore(t, newClient(t), Options{OnCounterBehind: func(key string, counter int64, prev idem.Token) {
		seen = append(seen, behind{key, counter, prev})
	}})
	ctx := ctxT(t)
	k := keysFor(s.opts.Prefix, "k")
	plant := func(token string) {
		t.Helper()
		if err := s.client.Del(ctx, k.record).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.client.HSet(ctx, k.record, "status", "in_progress", "fp", fpA.String(), "token", token,
			"prev_token", "0", "lease_ms", "1", "acq_id", "x").Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, prev := range []uint64{1<<53 + 1, 9_000_000_000_000_000_000, uint64(idem.MaxToken) - 16384} {
		plant(strconv.FormatUint(prev, 10))
		l, rec, err := s.Acquire(ctx, "k", fpA, longTTL)
		if err != nil || l == nil {
			t.Fatalf("take-over of token %d = %+v, %+v, %v", prev, l, rec, err)
		}
		if l.PrevToken != idem.Token(prev) || l.Token <= l.PrevToken || uint64(l.Token)%slotCount != uint64(k.slot) {
			t.Fatalf("take-over of token %d: lease token %d prev %d (slot %d)", prev, l.Token, l.PrevToken, k.slot)
		}
		stored, err := s.Get(ctx, "k")
		if err != nil || stored.Token != l.Token {
			t.Fatalf("stored record %+v, %v; want token %d", stored, err, l.Token)
		}
		if len(seen) == 0 || seen[len(seen)-1].prev != idem.Token(prev) || seen[len(seen)-1].key != "k" {
			t.Fatalf("OnCounterBehind calls %+v; want one for prev %d", seen, prev)
		}
		counter, _ := s.client.Get(ctx, k.fence()).Uint64()
		if counter*slotCount+uint64(k.slot) != uint64(l.Token) {
			t.Fatalf("counter %d does not issue token %d", counter, l.Token)
		}
	}
	// No token above MaxToken exists: the take-over fails closed.
	calls := len(seen)
	plant(strconv.FormatUint(uint64(idem.MaxToken), 10))
	before, _ := s.client.Dump(ctx, k.record).Result()
	if l, rec, err := s.Acquire(ctx, "k", fpA, longTTL); !errors.Is(err, ErrFenceCounter) || !errors.Is(err, idem.ErrCorruptRecord) || l != nil || rec != nil {
		t.Fatalf("take-over of MaxToken = %+v, %+v, %v; want ErrFenceCounter", l, rec, err)
	}
	if after, _ := s.client.Dump(ctx, k.record).Result(); after != before {
		t.Fatal("the refused take-over changed the record")
	}
	if len(seen) != calls {
		t.Fatalf("OnCounterBehind called for a refused take-over: %+v", seen[calls:])
	}
	// A counter that is not a positive integer issues nothing either.
	if err := s.client.Set(ctx, k.fence(), "-7", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.client.Del(ctx, k.record).Err(); err != nil {
		t.Fatal(err)
	}
	if l, _, err := s.Acquire(ctx, "k", fpA, longTTL); !errors.Is(err, ErrFenceCounter) || l != nil {
		t.Fatalf("claim with counter -7 = %+v, %v; want ErrFenceCounter", l, err)
	}
	if n, _ := s.client.Exists(ctx, k.record).Result(); n != 0 {
		t.Fatal("the refused claim wrote a record")
	}
}
