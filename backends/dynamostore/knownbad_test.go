package dynamostore

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idembench/idembench/backends/dynamostore/dynamotest"
	"github.com/idembench/idembench/backends/storetest"
)

// conditionless is a client that drops the condition of every PutItem: the
// DynamoDB counterpart of the check-then-act design (a claim that reads,
// then writes without "the item is still as read").
type conditionless struct{ API }

func (c conditionless) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	cp := *in
	cp.ConditionExpression, cp.ExpressionAttributeNames, cp.ExpressionAttributeValues = nil, nil, nil
	return c.API.PutItem(ctx, &cp, opts...)
}

// TestClaimWithoutConditionIsCaught: the suite's race sees the known-bad
// claim grant two leases on one key, and the real claim exactly one.
func TestClaimWithoutConditionIsCaught(t *testing.T) {
	good := newStore(t, Options{})
	bad, err := New(conditionless{dynamotest.Client(dynamotest.URL(t))}, Options{Table: good.opts.Table})
	if err != nil {
		t.Fatal(err)
	}
	const racers = 8
	caught := false
	for i := 0; i < 20 && !caught; i++ {
		leases, _ := storetest.RaceAcquire(t, bad, "bad.race."+time.Now().Format("150405.000000"), racers)
		caught = len(leases) > 1
	}
	if !caught {
		t.Fatal("a claim without its condition never granted two leases in 20 races: the race cannot see the flaw")
	}
	for i := range 5 {
		if leases, _ := storetest.RaceAcquire(t, good, "good.race."+time.Now().Format("150405.000000"), racers); len(leases) != 1 {
			t.Fatalf("race %d: the conditional claim granted %d leases, want 1", i, len(leases))
		}
	}
}
