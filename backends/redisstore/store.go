package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/idembench/idembench/idem"
	"github.com/redis/go-redis/v9"
)

// Store is an idem.Store on Redis, single node or Cluster. It is safe for
// concurrent use. It does not own the client: closing the client is the
// caller's job, after the last call to the store.
type Store struct {
	client  redis.UniversalClient
	opts    Options
	graceMS int64
	idBase  string        // random per Store; prefixes call ids
	seq     atomic.Uint64 // call id counter
	pubsub  atomic.Int32  // WaitChange subscription mode, see waiter.go
}

// Every capability the store has, in one place (no idem.Sweeper: Redis
// expires records itself).
var (
	_ idem.Store           = (*Store)(nil)
	_ idem.PolicyStore     = (*Store)(nil)
	_ idem.Waiter          = (*Store)(nil)
	_ idem.BatchStore      = (*Store)(nil)
	_ idem.PoolSizer       = (*Store)(nil)
	_ idem.Lister          = (*Store)(nil)
	_ idem.UncertainLister = (*Store)(nil)
	_ idem.PrefixLister    = (*Store)(nil)
	_ idem.Statter         = (*Store)(nil)
	_ idem.CorruptLister   = (*Store)(nil)
	_ idem.CorruptPurger   = (*Store)(nil)
)

// New returns a Store that keeps its records in client. It does no I/O;
// call CheckConfig to verify the server's eviction policy. It returns an
// error for a nil client or invalid Options.
func New(client redis.UniversalClient, opts Options) (*Store, error) {
	if client == nil {
		return nil, errors.New("redisstore: nil client")
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkWaitClient(client, opts.WaitReplicas); err != nil {
		return nil, err
	}
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails, see crypto/rand.Read
	return &Store{
		client:  client,
		opts:    opts,
		graceMS: millis(opts.TakeoverGrace),
		idBase:  hex.EncodeToString(b[:]) + ".",
	}, nil
}

// callID returns an id unique to one call of a write, across processes. A
// script that finds its own id in the record knows that it already ran: the
// client library delivered the same call twice after a connection failure.
func (s *Store) callID() string {
	return s.idBase + strconv.FormatUint(s.seq.Add(1), 36)
}

// Acquire claims key for fp, takes over an expired lease with the same
// fingerprint, or returns the existing record unchanged; see idem.Store.
// One script, one round trip. leaseTTL is rounded up to whole milliseconds
// and must be positive. A key holding something other than a valid record
// returns an error wrapping idem.ErrCorruptRecord and is left as it is.
func (s *Store) Acquire(ctx context.Context, key string, fp idem.Fingerprint, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	return s.AcquirePolicy(ctx, key, fp, "", leaseTTL)
}

// AcquirePolicy is Acquire for a request fingerprinted under policy
// (idem.PolicyStore): the record keeps policy in its fp_policy field, the
// same round trip. A policy that breaks idem.ValidatePolicy is refused
// before Redis is asked.
func (s *Store) AcquirePolicy(ctx context.Context, key string, fp idem.Fingerprint, policy string, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	if err := idem.ValidateAcquire(key, policy, leaseTTL); err != nil {
		return nil, nil, fmt.Errorf("redisstore: acquire: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	k := keysFor(s.opts.Prefix, key)
	cmd, werr := s.runWrite(ctx, "acquire", acquireScript, []string{k.record, k.fence()}, acquireWait,
		fp.String(), millis(leaseTTL), s.graceMS, s.callID(), k.slot, policy)
	res, err := cmd.Slice()
	if err == nil && werr != nil {
		return nil, nil, werr
	}
	return s.acquireReply(key, fp, policy, k, res, err)
}

// acquireReply decodes the reply of acquireScript for key.
func (s *Store) acquireReply(key string, fp idem.Fingerprint, policy string, k keyset, res []any, err error) (*idem.Lease, *idem.Record, error) {
	if err != nil {
		return nil, nil, storeError("acquire", err, true)
	}
	switch code, _ := replyInt(res, 0); code {
	case resultApplied:
		tok, ok1 := replyToken(res, 1)
		prev, ok2 := replyToken(res, 2)
		lease, ok3 := replyInt(res, 3)
		if !ok1 || !ok2 || !ok3 || tok == 0 || prev >= tok {
			break
		}
		if was, behind := replyInt(res, 4); behind && s.opts.OnCounterBehind != nil {
			s.opts.OnCounterBehind(key, was, prev)
		}
		if p, ok := replyString(res, 5); ok {
			policy = p // a take-over keeps the record's
		}
		return &idem.Lease{
			Key:               key,
			Token:             tok,
			Fingerprint:       fp,
			FingerprintPolicy: policy,
			PrevToken:         prev,
			Expiry:            time.UnixMilli(lease),
		}, nil, nil
	case resultRefused:
		rec, ok, err := scriptRecord(key, res, 1)
		if err != nil {
			return nil, nil, err
		}
		if !ok || rec == nil {
			break
		}
		return nil, rec, nil
	case resultCorrupt:
		return nil, nil, corrupt(key, "redis key %q is not a hash", k.record)
	case resultNoToken:
		v, _ := res[1].(string)
		return nil, nil, fmt.Errorf("redisstore: acquire %q: fencing counter %q = %q issues no token in [1, %d]: %w (%w)",
			key, k.fence(), v, idem.MaxToken, ErrFenceCounter, idem.ErrCorruptRecord)
	}
	return nil, nil, unexpected("acquire", res)
}

// Heartbeat extends l to now+leaseTTL by the server clock and sets
// l.Expiry; see idem.Store. It returns idem.ErrLeaseLost, changing nothing,
// unless the record is in progress with l.Token (an expired lease that was
// not taken over is still owned and is renewed).
func (s *Store) Heartbeat(ctx context.Context, l *idem.Lease, leaseTTL time.Duration) error {
	if err := idem.ValidateLeaseTTL(leaseTTL); err != nil {
		return fmt.Errorf("redisstore: heartbeat: %w", err)
	}
	if l == nil {
		return errors.New("redisstore: heartbeat: nil lease")
	}
	lease, err := s.fenced(ctx, "heartbeat", heartbeatScript, l, keysFor(s.opts.Prefix, l.Key), millis(leaseTTL), s.graceMS)
	if err != nil {
		return err
	}
	l.Expiry = time.UnixMilli(lease)
	return nil
}

// Complete stores resp as the completed response of l's key, kept for
// retention (rounded up to whole milliseconds; must be positive), and wakes
// WaitChange callers. It returns idem.ErrLeaseLost, changing nothing,
// unless the record is in progress with l.Token.
func (s *Store) Complete(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, "complete", idem.StatusCompleted, l, resp, retention)
}

// Fail stores resp as a permanent failure of l's key, kept for retention and
// replayed like a completion. Fencing and errors are as for Complete.
func (s *Store) Fail(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, "fail", idem.StatusFailed, l, resp, retention)
}

func (s *Store) finish(ctx context.Context, op string, st idem.Status, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	if retention <= 0 {
		return fmt.Errorf("redisstore: %s: retention %v is not positive", op, retention)
	}
	if l == nil {
		return fmt.Errorf("redisstore: %s: nil lease", op)
	}
	k := keysFor(s.opts.Prefix, l.Key)
	_, err := s.fenced(ctx, op, finishScript, l, k, st.String(), idem.EncodeResponse(&resp),
		millis(retention), s.callID())
	return err
}

// Release deletes l's in-progress record so that the request can be retried,
// and wakes WaitChange callers. The fencing counter is kept: the next lease
// gets a higher token. It returns idem.ErrLeaseLost, changing nothing,
// unless the record is in progress with l.Token. A Release whose reply was
// lost and that the client library retried reports idem.ErrLeaseLost,
// although the record was released.
func (s *Store) Release(ctx context.Context, l *idem.Lease) error {
	if l == nil {
		return errors.New("redisstore: release: nil lease")
	}
	k := keysFor(s.opts.Prefix, l.Key)
	_, err := s.fenced(ctx, "release", releaseScript, l, k)
	return err
}

// fenced runs a fenced script with KEYS = {k.record} and ARGV = {token,
// args...}, maps its result to the error contract, and returns the result
// when the write was applied. l must not be nil and k must be l.Key's
// keyset.
func (s *Store) fenced(ctx context.Context, op string, script *redis.Script, l *idem.Lease, k keyset, args ...any) (int64, error) {
	if err := idem.ValidateKey(l.Key); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	argv := make([]any, 0, 1+len(args))
	argv = append(argv, strconv.FormatUint(uint64(l.Token), 10))
	argv = append(argv, args...)
	cmd, werr := s.runWrite(ctx, op, script, []string{k.record}, appliedInt, argv...)
	res, err := cmd.Int64()
	if err == nil && werr != nil {
		return 0, werr
	}
	n, err := fencedReply(op, l, k, res, err)
	return n, s.lostOrCorrupt(ctx, err)
}

// lostOrCorrupt turns err, the outcome of a fenced write, into an error
// wrapping idem.ErrCorruptRecord when the write was refused as lease lost
// but the record does not decode: the scripts judge every field but a
// finished record's response, which only Go decodes. It costs a read on
// the lease-lost path only.
func (s *Store) lostOrCorrupt(ctx context.Context, err error) error {
	var lost *leaseLostError
	if !errors.As(err, &lost) {
		return err
	}
	if _, gerr := s.Get(ctx, lost.key); errors.Is(gerr, idem.ErrCorruptRecord) {
		return gerr
	}
	return err
}

// leaseLostError is a fenced write refused because the record does not
// carry the caller's token. It wraps idem.ErrLeaseLost.
type leaseLostError struct {
	op, key string
	token   idem.Token
}

func (e *leaseLostError) Error() string {
	return fmt.Sprintf("redisstore: %s: key %q token %d: %v", e.op, e.key, e.token, idem.ErrLeaseLost)
}

func (e *leaseLostError) Unwrap() error { return idem.ErrLeaseLost }

// fencedReply maps the reply of a fenced script to the error contract.
func fencedReply(op string, l *idem.Lease, k keyset, res int64, err error) (int64, error) {
	if err != nil {
		if redis.HasErrorPrefix(err, "WRONGTYPE") {
			return 0, corrupt(l.Key, "redis key %q is not a hash", k.record)
		}
		return 0, storeError(op, err, true)
	}
	switch {
	case res >= resultApplied:
		return res, nil
	case res == resultRefused:
		return 0, &leaseLostError{op: op, key: l.Key, token: l.Token}
	case res == resultCorrupt:
		return 0, corrupt(l.Key, "redis key %q does not hold a valid record (see Get for the field)", k.record)
	}
	return 0, unexpected(op, []any{res})
}

// Get returns the record of key, or an error wrapping idem.ErrNotFound. It
// is one read-only script (HGETALL, TIME and PTTL, for ExpiresAt). A key
// holding something other than a valid record returns an error wrapping
// idem.ErrCorruptRecord.
func (s *Store) Get(ctx context.Context, key string) (*idem.Record, error) {
	if err := idem.ValidateKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k := keysFor(s.opts.Prefix, key)
	res, err := getScript.Run(ctx, s.client, []string{k.record}).Slice()
	if err != nil {
		return nil, storeError("get", err, false)
	}
	if code, _ := replyInt(res, 0); code == resultCorrupt {
		return nil, corrupt(key, "redis key %q is not a hash", k.record)
	}
	rec, ok, err := scriptRecord(key, res, 1)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, unexpected("get", res)
	case rec == nil:
		return nil, fmt.Errorf("redisstore: key %q: %w", key, idem.ErrNotFound)
	}
	return rec, nil
}

// replyInt returns element i of a script reply as an integer.
func replyInt(res []any, i int) (int64, bool) {
	if i >= len(res) {
		return 0, false
	}
	n, ok := res[i].(int64)
	return n, ok
}

// replyToken returns element i of a script reply as a token: a decimal
// string in parseDecimal's form, or "0" (no token).
func replyToken(res []any, i int) (idem.Token, bool) {
	if i >= len(res) {
		return 0, false
	}
	v, ok := res[i].(string)
	if !ok {
		return 0, false
	}
	if v == "0" {
		return 0, true
	}
	n, ok := parseDecimal(v)
	return idem.Token(n), ok
}

// unexpected reports a script reply of the wrong shape: a version mismatch
// between scripts and code, never a valid outcome.
func unexpected(op string, res []any) error {
	return idem.BackendError(op, fmt.Errorf("redisstore: unexpected script reply %v", res))
}

// replyString returns element i of a script reply as a string.
func replyString(res []any, i int) (string, bool) {
	if i >= len(res) {
		return "", false
	}
	v, ok := res[i].(string)
	return v, ok
}

// PoolSize implements idem.PoolSizer: the connection pool size of a
// single-node client (redis.Client), 0 for a cluster or ring client, whose
// pools are per node.
func (s *Store) PoolSize() int {
	if c, ok := s.client.(*redis.Client); ok {
		return c.Options().PoolSize
	}
	return 0
}
