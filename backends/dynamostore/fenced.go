package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idembench/idembench/idem"
)

// fencedCond is the ownership test of every write after Acquire: the record
// is in progress with the caller's token and fingerprint, not past ex, and
// passes every rule decodeItem applies to an in-progress record, so a
// corrupt item is never overwritten. An expired lease that was not taken
// over still passes.
const fencedCond = "#st = :ip AND #tok = :tok AND #fp = :fp AND attribute_not_exists(#resp)" +
	" AND #lx BETWEEN :zero AND :maxms AND #ex > :now AND #ex <= :maxms"

// fenced is one fenced write: the names and values of fencedCond for l at
// now, to which the write adds its own.
func fenced(l *idem.Lease, now time.Time) (map[string]string, map[string]types.AttributeValue) {
	names := map[string]string{
		"#st": attrStatus, "#tok": attrToken, "#fp": attrFP, "#resp": attrResp, "#lx": attrLease, "#ex": attrExpires,
	}
	values := map[string]types.AttributeValue{
		":ip": strAV(idem.StatusInProgress.String()), ":tok": tokAV(l.Token), ":fp": binAV(l.Fingerprint[:]),
		":zero": numAV(0), ":maxms": numAV(maxMillis), ":now": msAV(now),
	}
	return names, values
}

// refused turns a fenced write the condition refused into its error: the
// item's corruption when it does not decode, idem.ErrLeaseLost otherwise.
// done reports that the item already is what the write would have made it
// (a retried request that had been applied).
func (s *Store) refused(ctx context.Context, op string, l *idem.Lease, item map[string]types.AttributeValue, newSize int, done func(*idem.Record) bool) error {
	s.usage.refusedWrite(newSize, itemSize(item))
	if item == nil {
		var err error
		if item, err = s.read(ctx, l.Key); err != nil {
			return err
		}
	}
	d, err := decodeItem(l.Key, item, s.clock.Now())
	if err != nil {
		return err
	}
	if d.rec != nil && d.rec.Token == l.Token && done != nil && done(d.rec) {
		return nil
	}
	return fmt.Errorf("dynamostore: %s %q with token %d: %w", op, l.Key, l.Token, idem.ErrLeaseLost)
}

// update runs one fenced UpdateItem on l's record.
func (s *Store) update(ctx context.Context, op string, l *idem.Lease, now time.Time, expr string, names map[string]string, values map[string]types.AttributeValue, newSize int, done func(*idem.Record) bool) error {
	if err := ctx.Err(); err != nil {
		return backendError(op, err, false)
	}
	out, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.opts.Table),
		Key:                                 map[string]types.AttributeValue{attrPK: strAV(recordPK(l.Key))},
		UpdateExpression:                    aws.String(expr),
		ConditionExpression:                 aws.String(fencedCond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
	})
	ccf, err := s.settleWrite(op, &s.usage.updates, err, func() *types.ConsumedCapacity { return out.ConsumedCapacity })
	if ccf != nil {
		return s.refused(ctx, op, l, ccf.Item, newSize, done)
	}
	return err
}

// Heartbeat extends l to now+leaseTTL (and the record's ex to the lease
// plus the take-over grace) and updates l.Expiry. It returns an error
// wrapping idem.ErrLeaseLost unless the record is in progress with
// l.Token, expired or not, and idem.ErrCorruptRecord when it does not
// decode.
func (s *Store) Heartbeat(ctx context.Context, l *idem.Lease, leaseTTL time.Duration) error {
	if err := idem.ValidateLeaseTTL(leaseTTL); err != nil {
		return fmt.Errorf("dynamostore: heartbeat %q: %w", l.Key, err)
	}
	now := s.clock.Now()
	lx := now.Add(leaseTTL)
	ex := lx.Add(s.opts.TakeoverGrace)
	names, values := fenced(l, now)
	names["#ttl"] = attrTTL
	values[":lx"], values[":ex"], values[":ttl"] = msAV(lx), msAV(ex), ttlAV(ex)
	err := s.update(ctx, "heartbeat", l, now, "SET #lx = :lx, #ex = :ex, #ttl = :ttl", names, values, 0, nil)
	if err == nil {
		l.Expiry = lx
	}
	return err
}

// Complete stores resp as the completed response of l's record, kept for
// retention. Fenced like Heartbeat. A response whose item would exceed
// DynamoDB's 400 KB returns an error wrapping ErrItemTooLarge and
// idem.ErrResponseTooLarge, and nothing is sent.
func (s *Store) Complete(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, "complete", l, idem.StatusCompleted, resp, retention)
}

// Fail stores resp as a permanent failure, like Complete.
func (s *Store) Fail(ctx context.Context, l *idem.Lease, resp idem.Response, retention time.Duration) error {
	return s.finish(ctx, "fail", l, idem.StatusFailed, resp, retention)
}

func (s *Store) finish(ctx context.Context, op string, l *idem.Lease, st idem.Status, resp idem.Response, retention time.Duration) error {
	if retention <= 0 {
		return fmt.Errorf("dynamostore: %s %q: retention %v is not positive", op, l.Key, retention)
	}
	now := s.clock.Now()
	ex := now.Add(retention)
	body := idem.EncodeResponse(&resp)
	final := map[string]types.AttributeValue{
		attrPK: strAV(recordPK(l.Key)), attrStatus: strAV(st.String()), attrFP: binAV(l.Fingerprint[:]),
		attrToken: tokAV(l.Token), attrExpires: msAV(ex), attrTTL: ttlAV(ex), attrResp: binAV(body),
	}
	if l.FingerprintPolicy != "" {
		final[attrPolicy] = strAV(l.FingerprintPolicy)
	}
	if size := itemSize(final); size > MaxItemSize {
		return fmt.Errorf("dynamostore: %s %q: item of %d bytes, limit %d (response %d bytes): %w (%w)",
			op, l.Key, size, MaxItemSize, resp.Size(), ErrItemTooLarge, idem.ErrResponseTooLarge)
	}
	names, values := fenced(l, now)
	names["#ttl"] = attrTTL
	values[":st"], values[":resp"], values[":ex"], values[":ttl"] = strAV(st.String()), binAV(body), msAV(ex), ttlAV(ex)
	done := func(r *idem.Record) bool { return r.Status == st && r.Response.Equal(&resp) }
	return s.update(ctx, op, l, now, "SET #st = :st, #resp = :resp, #ex = :ex, #ttl = :ttl REMOVE #lx", names, values, itemSize(final), done)
}

// Release deletes l's in-progress record so the request can be retried;
// the next claim draws a higher token from the counter. Fenced like
// Heartbeat.
func (s *Store) Release(ctx context.Context, l *idem.Lease) error {
	if err := ctx.Err(); err != nil {
		return backendError("release", err, false)
	}
	now := s.clock.Now()
	names, values := fenced(l, now)
	out, err := s.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                           aws.String(s.opts.Table),
		Key:                                 map[string]types.AttributeValue{attrPK: strAV(recordPK(l.Key))},
		ConditionExpression:                 aws.String(fencedCond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
	})
	ccf, err := s.settleWrite("release", &s.usage.deletes, err, func() *types.ConsumedCapacity { return out.ConsumedCapacity })
	if ccf != nil {
		return s.refused(ctx, "release", l, ccf.Item, 0, nil)
	}
	return err
}

// Get returns the record of key. A key with no item, or past its ex
// (whether or not DynamoDB's TTL deleted it yet), returns an error wrapping
// idem.ErrNotFound; an item that does not decode, idem.ErrCorruptRecord.
func (s *Store) Get(ctx context.Context, key string) (*idem.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, backendError("get", err, false)
	}
	item, err := s.read(ctx, key)
	if err != nil {
		return nil, err
	}
	d, err := decodeItem(key, item, s.clock.Now())
	if err != nil {
		return nil, err
	}
	if d.absent {
		return nil, fmt.Errorf("dynamostore: get %q: %w", key, idem.ErrNotFound)
	}
	return d.rec, nil
}
