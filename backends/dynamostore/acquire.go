package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idembench/idembench/idem"
)

// maxAcquireAttempts bounds how often Acquire decides again after its claim
// lost a race; each further attempt needs the item to change again.
const maxAcquireAttempts = 16

// errAcquireChurn is returned, as a backend error, when the item changed
// under every attempt: the key is in an unknown state, so Acquire fails
// closed.
var errAcquireChurn = errors.New("record changed concurrently on every attempt")

// Acquire claims key for fp, or returns the record that is there (see
// idem.Store and the package doc). It reads the item once; a present
// record that is not claimable is returned as read (one request). An
// absent key, or an in-progress record whose lease expired and whose
// fingerprint is fp, is claimed with a fresh token from the key's counter
// and one conditional PutItem; a take-over sets Lease.PrevToken. An item
// that does not decode returns an error wrapping idem.ErrCorruptRecord and
// is never claimed.
func (s *Store) Acquire(ctx context.Context, key string, fp idem.Fingerprint, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	return s.AcquirePolicy(ctx, key, fp, "", leaseTTL)
}

// AcquirePolicy is Acquire for a request fingerprinted under policy
// (idem.PolicyStore): a new item keeps it in its fpp attribute (none for
// ""), a take-over keeps the item's. A policy that breaks
// idem.ValidatePolicy is refused before DynamoDB is asked.
func (s *Store) AcquirePolicy(ctx context.Context, key string, fp idem.Fingerprint, policy string, leaseTTL time.Duration) (*idem.Lease, *idem.Record, error) {
	if err := idem.ValidateAcquire(key, policy, leaseTTL); err != nil {
		return nil, nil, fmt.Errorf("dynamostore: acquire: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, backendError("acquire", err, false)
	}
	item, err := s.read(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	for range maxAcquireAttempts {
		now := s.clock.Now()
		d, err := decodeItem(key, item, now)
		if err != nil {
			return nil, nil, err
		}
		var prev idem.Token
		pol := policy
		if !d.absent {
			rec := d.rec
			if rec.Status != idem.StatusInProgress || rec.LeaseLive(now) || rec.Fingerprint != fp {
				return nil, rec, nil
			}
			prev = rec.Token // an expired lease of the same request: take-over
			pol = rec.FingerprintPolicy
		}
		tok, err := s.nextToken(ctx, key, d.tok)
		if err != nil {
			return nil, nil, err
		}
		l, won, err := s.claim(ctx, key, fp, pol, leaseTTL, tok, prev, item)
		if err != nil || l != nil {
			return l, nil, err
		}
		item = won
	}
	return nil, nil, backendError("acquire", fmt.Errorf("key %q: %w", key, errAcquireChurn), false)
}

// read returns key's record item (nil when there is none), with a strongly
// consistent read.
func (s *Store) read(ctx context.Context, key string) (map[string]types.AttributeValue, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:              aws.String(s.opts.Table),
		Key:                    map[string]types.AttributeValue{attrPK: strAV(recordPK(key))},
		ConsistentRead:         aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	s.usage.gets.Add(1)
	if err != nil {
		return nil, backendError("get", err, false)
	}
	s.usage.readConsumed(out.ConsumedCapacity)
	return out.Item, nil
}

// claim writes a fresh in-progress record for key with token tok, on the
// condition that the item is still as read (seen; nil for none). It
// returns the lease, or the item that won the race (nil when the server
// did not send it back, so it is read again).
func (s *Store) claim(ctx context.Context, key string, fp idem.Fingerprint, policy string, leaseTTL time.Duration, tok, prev idem.Token, seen map[string]types.AttributeValue) (*idem.Lease, map[string]types.AttributeValue, error) {
	now := s.clock.Now()
	lx := now.Add(leaseTTL)
	ex := lx.Add(s.opts.TakeoverGrace)
	item := map[string]types.AttributeValue{
		attrPK:      strAV(recordPK(key)),
		attrStatus:  strAV(idem.StatusInProgress.String()),
		attrFP:      binAV(fp[:]),
		attrToken:   tokAV(tok),
		attrLease:   msAV(lx),
		attrExpires: msAV(ex),
		attrTTL:     ttlAV(ex),
	}
	if policy != "" {
		item[attrPolicy] = strAV(policy)
	}
	lease := &idem.Lease{Key: key, Token: tok, Fingerprint: fp, FingerprintPolicy: policy, PrevToken: prev, Expiry: lx}
	cond, names, values := unchanged(seen)
	out, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.opts.Table),
		Item:                                item,
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
	})
	ccf, err := s.settleWrite("acquire", &s.usage.puts, err, func() *types.ConsumedCapacity { return out.ConsumedCapacity })
	if ccf != nil {
		s.usage.refusedWrite(itemSize(item), itemSize(ccf.Item))
		won := ccf.Item
		if won == nil {
			if won, err = s.read(ctx, key); err != nil {
				return nil, nil, err
			}
		}
		if mine(won, tok) { // a retried request that had been applied
			return lease, nil, nil
		}
		return nil, won, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return lease, nil, nil
}

// mine reports whether item is an in-progress record with token tok: a
// token is drawn once from its counter, so only this claim wrote it.
func mine(item map[string]types.AttributeValue, tok idem.Token) bool {
	st, _ := item[attrStatus].(*types.AttributeValueMemberS)
	n, _ := item[attrToken].(*types.AttributeValueMemberN)
	return st != nil && n != nil && st.Value == idem.StatusInProgress.String() && n.Value == strconv.FormatUint(uint64(tok), 10)
}

// unchanged is the condition "the item is exactly as seen": no item when
// seen is nil; otherwise every attribute the decoder reads (st, fp, tok,
// lx, ex, fpp) equal to what was seen, or still missing, and a response still
// missing if none was seen. A record the decoder judged claimable is so
// again when the condition holds.
func unchanged(seen map[string]types.AttributeValue) (string, map[string]string, map[string]types.AttributeValue) {
	if seen == nil {
		return "attribute_not_exists(#pk)", map[string]string{"#pk": attrPK}, nil
	}
	names := map[string]string{}
	values := map[string]types.AttributeValue{}
	cond := ""
	for i, a := range []string{attrStatus, attrFP, attrToken, attrLease, attrExpires, attrResp, attrPolicy} {
		n := "#a" + strconv.Itoa(i)
		names[n] = a
		if cond != "" {
			cond += " AND "
		}
		v, ok := seen[a]
		switch {
		case !ok:
			cond += "attribute_not_exists(" + n + ")"
		case a == attrResp:
			// Responses are large; a record that had one was completed or
			// failed and is claimable only past ex, which is compared.
			cond += "attribute_exists(" + n + ")"
		default:
			vn := ":v" + strconv.Itoa(i)
			values[vn] = v
			cond += n + " = " + vn
		}
	}
	return cond, names, values
}
