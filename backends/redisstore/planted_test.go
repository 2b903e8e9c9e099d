package redisstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
)

// rapidChooser draws with pgregory.net/rapid, which reports and shrinks
// every choice under its label.
func rapidChooser(t *rapid.T) storetest.Chooser {
	return func(label string, n int) int { return rapid.IntRange(0, n-1).Draw(t, label) }
}

// plantFields are the hash fields a planted change may touch: every field
// a record has, and one no version of the store writes.
var plantFields = []string{fieldStatus, fieldFP, fieldToken, fieldPrev, fieldLease, fieldAcqID, fieldResponse, fieldDoneID, fieldWatch, fieldPolicy, "extra"}

// plantValues returns the values a planted field may take, given the
// record's current fields h: numbers in every form Lua or strconv might
// read (and the store must not), values just around the record's own, and
// valid values of every field, so that some changes leave a valid record
// in another state (an expired lease, a higher token) for the store to
// handle normally.
func plantValues(h map[string]string) []string {
	tok, _ := strconv.ParseInt(h[fieldToken], 10, 64)
	ms := time.Now().UnixMilli()
	ok := string(idem.EncodeResponse(&idem.Response{Status: 201, Body: []byte("planted")}))
	return []string{
		"", "0", "1", "5", "-1", "-100", "1.5", "5.5", "0x10", "1e3", "1e30", "inf", "-inf", "nan",
		"+5", " 5", "5 ", "007", "9007199254740993", "9000000000000000000", "9223372036854775807",
		"9223372036854775808", "18446744073709551615", "-9223372036854775808",
		strconv.FormatInt(tok-1, 10), strconv.FormatInt(tok+1, 10), strconv.FormatInt(tok, 10),
		"in_progress", "completed", "failed", "uncertain", "released", "IN_PROGRESS",
		fpA.String(), fpB.String(), strings.ToUpper(fpA.String()), fpA.String()[:62], fpA.String() + "00",
		ok, ok[:len(ok)-1], "\x00\xff\xfe", "\x01", "payments/v2", "pay ments", strings.Repeat("p", 129), strconv.FormatInt(ms-60_000, 10), strconv.FormatInt(ms+3_600_000, 10),
	}
}

// plantRedis changes the record key (a hash the store wrote) at random
// with pick: one to three field changes (set to a value of plantValues,
// or delete), or, rarely, a key of another type in its place. The key's
// expiry is kept. It returns what it did.
func plantRedis(ctx context.Context, c redis.UniversalClient, rk string, pick storetest.Chooser) (string, error) {
	if pick("other type", 16) == 0 {
		if err := c.Del(ctx, rk).Err(); err != nil {
			return "", err
		}
		switch pick("type", 4) {
		case 0:
			return "a string", c.Set(ctx, rk, "garbage", time.Hour).Err()
		case 1:
			return "a list", c.RPush(ctx, rk, "a", "b").Err()
		case 2:
			return "a set", c.SAdd(ctx, rk, "a").Err()
		default:
			return "a sorted set", c.ZAdd(ctx, rk, redis.Z{Score: 1, Member: "a"}).Err()
		}
	}
	var did []string
	for range 1 + pick("changes", 3) {
		h, err := c.HGetAll(ctx, rk).Result()
		if err != nil {
			return "", err
		}
		f := plantFields[pick("field", len(plantFields))]
		values := plantValues(h)
		v := pick("value", len(values)+1)
		if v == len(values) {
			did = append(did, "delete "+f)
			if err := c.HDel(ctx, rk, f).Err(); err != nil {
				return "", err
			}
			continue
		}
		did = append(did, fmt.Sprintf("%s = %q", f, values[v]))
		if err := c.HSet(ctx, rk, f, values[v]).Err(); err != nil {
			return "", err
		}
	}
	return strings.Join(did, ", "), nil
}

// plantConfig adds plantRedis to a conformance configuration.
func plantConfig(cfg storetest.Config) storetest.Config {
	cfg.Plant = func(t *testing.T, st idem.Store, key string, r *rand.Rand) string {
		s := st.(*Store)
		desc, err := plantRedis(ctxT(t), s.client, keysFor(s.opts.Prefix, key).record, storetest.RandChooser(r))
		if err != nil {
			t.Fatal(err)
		}
		return desc
	}
	return cfg
}

// slotPool is a few keys whose records share one hash slot, and so one
// fencing counter.
type slotPool struct {
	keys []string
	slot uint16
}

// newSlotPool returns n keys of the slot of seed.
func newSlotPool(seed string, n int) slotPool {
	p := slotPool{slot: keySlot(escapeTag(seed))}
	for i := 0; len(p.keys) < n; i++ {
		k := fmt.Sprintf("%s.%d", seed, i)
		if keySlot(escapeTag(k)) == p.slot {
			p.keys = append(p.keys, k)
		}
	}
	return p
}

// plantedProperty is the fail-closed property on a Redis store: a record
// created through the store (in progress, completed or failed), changed
// by plantRedis, then held to storetest.Planted, with two more checks
// across runs that only Redis can make: the slot's fencing counter never
// decreases, and no token is issued at or below one issued before in the
// slot (all keys of a run share one slot, so a take-over that poisoned the
// counter shows at the next claim). The run count is rapid's
// (-rapid.checks, 100 by default); pgregory.net/rapid shrinks a failing
// case to the fewest, simplest field changes.
func plantedProperty(t *testing.T, s *Store) {
	// The run count is the caller's (-rapid.checks): no deadline of ctxT.
	ctx := context.Background()
	run := 0
	pool := newSlotPool(fmt.Sprintf("planted%d", run), 16)
	var slotMax idem.Token
	rapid.Check(t, func(rt *rapid.T) {
		run++
		fence := keysFor(s.opts.Prefix, pool.keys[0]).fence()
		if n, _ := s.client.Get(ctx, fence).Int64(); n > 1<<40 {
			// A valid planted token near MaxToken moved the counter up:
			// go on in a fresh slot, so that claims do not run out.
			pool, slotMax = newSlotPool(fmt.Sprintf("planted%d", run), 16), 0
			fence = keysFor(s.opts.Prefix, pool.keys[0]).fence()
		}
		key := pool.keys[rapid.IntRange(0, len(pool.keys)-1).Draw(rt, "key")]
		rk := keysFor(s.opts.Prefix, key).record
		if err := s.client.Del(ctx, rk).Err(); err != nil {
			rt.Fatal(err)
		}
		l, _, err := s.Acquire(ctx, key, fpA, time.Hour)
		if err != nil || l == nil {
			rt.Fatalf("claim of %q: %+v, %v", key, l, err)
		}
		if l.Token <= slotMax {
			rt.Fatalf("claim of %q got token %d, not above %d issued before in slot %d", key, l.Token, slotMax, pool.slot)
		}
		storetest.Settle(rt, s, l, rapid.IntRange(0, storetest.PlantStates-1).Draw(rt, "state"))
		before, err := s.client.Get(ctx, fence).Int64()
		if err != nil {
			rt.Fatal(err)
		}
		desc, err := plantRedis(ctx, s.client, rk, rapidChooser(rt))
		if err != nil {
			rt.Fatal(err)
		}
		slotMax = max(slotMax, storetest.Planted(rt, s, key, fpA, l.Token, desc))
		if after, err := s.client.Get(ctx, fence).Int64(); err != nil || after < before {
			rt.Fatalf("%s: slot counter %d → %d (%v)", desc, before, after, err)
		}
	})
	t.Logf("%d planted records", run)
}

// TestPlantedRecords runs the fail-closed property on a single Redis.
func TestPlantedRecords(t *testing.T) {
	t.Parallel()
	plantedProperty(t, newStore(t, newClient(t), Options{}))
}
