package dynamostore

import (
	"context"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idembench/idembench/idem"
)

var (
	_ idem.Lister       = (*Store)(nil)
	_ idem.PrefixLister = (*Store)(nil)
)

// Scanner is implemented by clients that can scan a table; a
// *dynamodb.Client does. ListStuck needs it.
type Scanner interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// ListStuck implements idem.Lister: in-progress records whose lease
// expired at least olderThan ago. It scans the whole table (DynamoDB has
// no index on lease expiry here; a Scan reads, and bills, every item): an
// operator's or a completer's call, not a hot-path one. Items that do not
// decode are skipped.
func (s *Store) ListStuck(ctx context.Context, olderThan time.Duration, limit int) ([]*idem.Record, error) {
	return s.ListStuckPrefix(ctx, "", olderThan, limit)
}

// ListStuckPrefix implements idem.PrefixLister: ListStuck of the keys that
// start with prefix, filtered by the Scan.
func (s *Store) ListStuckPrefix(ctx context.Context, prefix string, olderThan time.Duration, limit int) ([]*idem.Record, error) {
	scanner, ok := s.api.(Scanner)
	if !ok {
		return nil, idem.BackendError("dynamostore: list", errNoScan)
	}
	limit = idem.ListLimit(limit)
	now := s.clock.Now()
	cut := now.Add(-max(olderThan, 0))
	in := &dynamodb.ScanInput{
		TableName:                aws.String(s.opts.Table),
		FilterExpression:         aws.String("begins_with(#pk, :p) AND #st = :ip AND #lx <= :cut"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#st": attrStatus, "#lx": attrLease},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":p": strAV(recordPK(prefix)), ":ip": strAV(idem.StatusInProgress.String()), ":cut": msAV(cut),
		},
		ConsistentRead:         aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}
	var out []*idem.Record
	for {
		page, err := scanner.Scan(ctx, in)
		if err != nil {
			return out, backendError("list", err, false)
		}
		s.usage.readConsumed(page.ConsumedCapacity)
		for _, item := range page.Items {
			pk, _ := item[attrPK].(*types.AttributeValueMemberS)
			if pk == nil || !strings.HasPrefix(pk.Value, "k:") {
				continue
			}
			d, err := decodeItem(strings.TrimPrefix(pk.Value, "k:"), item, now)
			if err != nil || d.rec == nil || d.rec.Status != idem.StatusInProgress || d.rec.LeaseExpiry.After(cut) {
				continue
			}
			if out = append(out, d.rec); len(out) >= limit {
				return out, nil
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}
