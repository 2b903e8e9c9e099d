package dynamostore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idembench/idembench/idem"
)

// nextToken draws a token for a claim of key from the key's family counter
// with an atomic ADD. The token must be above above, the token of the item
// the claim replaces (zero for none): a counter at or below it (a restored
// or edited table) is first moved to it, never backwards, and
// Options.OnCounterBehind is told. A counter that would pass idem.MaxToken
// returns ErrCounterExhausted, wrapping idem.ErrCorruptRecord.
func (s *Store) nextToken(ctx context.Context, key string, above idem.Token) (idem.Token, error) {
	if above >= idem.MaxToken {
		return 0, fmt.Errorf("%w: key %q: record token %d leaves no higher token: %w", ErrCounterExhausted, key, above, idem.ErrCorruptRecord)
	}
	for range 2 {
		tok, err := s.addCounter(ctx, key)
		if err != nil {
			return 0, err
		}
		if tok > above {
			return tok, nil
		}
		if s.opts.OnCounterBehind != nil {
			s.opts.OnCounterBehind(key, tok, above)
		}
		if err := s.raiseCounter(ctx, key, above); err != nil {
			return 0, err
		}
	}
	return 0, backendError("counter", fmt.Errorf("key %q: counter %s stayed at or below %d", key, s.counterPK(key), above), false)
}

// addCounter increments key's family counter and returns its new value.
func (s *Store) addCounter(ctx context.Context, key string) (idem.Token, error) {
	out, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.opts.Table),
		Key:                       map[string]types.AttributeValue{attrPK: strAV(s.counterPK(key))},
		UpdateExpression:          aws.String("ADD #n :one"),
		ExpressionAttributeNames:  map[string]string{"#n": attrCounter},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": numAV(1)},
		ReturnValues:              types.ReturnValueUpdatedNew,
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	s.usage.updates.Add(1)
	if err != nil {
		// An ADD that may have been applied only leaves a gap: not ambiguous
		// for the caller, whose claim has not been written.
		return 0, backendError("counter", err, false)
	}
	s.usage.consumed(out.ConsumedCapacity)
	n, ok := out.Attributes[attrCounter].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("%w: counter %s: attribute %s missing or not a number", idem.ErrCorruptRecord, s.counterPK(key), attrCounter)
	}
	v, err := strconv.ParseUint(n.Value, 10, 64)
	if err != nil || v == 0 || v > uint64(idem.MaxToken) {
		return 0, fmt.Errorf("%w: counter %s = %s: %w", ErrCounterExhausted, s.counterPK(key), n.Value, idem.ErrCorruptRecord)
	}
	return idem.Token(v), nil
}

// raiseCounter sets key's family counter to to unless it is there already
// or beyond.
func (s *Store) raiseCounter(ctx context.Context, key string, to idem.Token) error {
	out, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.opts.Table),
		Key:                       map[string]types.AttributeValue{attrPK: strAV(s.counterPK(key))},
		UpdateExpression:          aws.String("SET #n = :to"),
		ConditionExpression:       aws.String("attribute_not_exists(#n) OR #n < :to"),
		ExpressionAttributeNames:  map[string]string{"#n": attrCounter},
		ExpressionAttributeValues: map[string]types.AttributeValue{":to": tokAV(to)},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	s.usage.updates.Add(1)
	if conditionFailed(err) != nil {
		s.usage.refusedWrite(0, 0)
		return nil // someone moved it at least as far
	}
	if err != nil {
		return backendError("counter", err, false)
	}
	s.usage.consumed(out.ConsumedCapacity)
	return nil
}
