package dynamostore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"pgregory.net/rapid"

	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
)

// plantValue is one value a planted change may give an attribute: nil
// removes it. cur is the item as stored before the change.
type plantValue struct {
	name string
	av   func(cur map[string]types.AttributeValue) types.AttributeValue
}

func fixed(name string, av types.AttributeValue) plantValue {
	return plantValue{name, func(map[string]types.AttributeValue) types.AttributeValue { return av }}
}

// relTok is the current token plus d, as a number.
func relTok(d int64) plantValue {
	return plantValue{fmt.Sprintf("tok%+d", d), func(cur map[string]types.AttributeValue) types.AttributeValue {
		n, _ := cur[attrToken].(*types.AttributeValueMemberN)
		if n == nil {
			return numAV(d)
		}
		v, _ := strconv.ParseInt(n.Value, 10, 64)
		return numAV(v + d)
	}}
}

// relTime is now plus d in Unix milliseconds (a number), with frac appended
// to make it a fraction.
func relTime(d time.Duration, frac string) plantValue {
	return plantValue{fmt.Sprintf("now%+v%s", d, frac), func(map[string]types.AttributeValue) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Add(d).UnixMilli(), 10) + frac}
	}}
}

// plantAttrs are the attributes a planted change may set, each with the
// values it may take: other types, out-of-range and fractional numbers,
// values around the item's own, removal, junk bytes, and valid values of
// every attribute, so that some changes leave a valid item in another
// state (an expired lease, a higher token) for the store to handle.
var plantAttrs = []struct {
	name   string
	values []plantValue
}{
	{attrStatus, []plantValue{fixed("in_progress", strAV("in_progress")), fixed("completed", strAV("completed")),
		fixed("failed", strAV("failed")), fixed("bogus", strAV("bogus")), fixed("empty", strAV("")),
		fixed("IN_PROGRESS", strAV("IN_PROGRESS")), fixed("N1", numAV(1)), fixed("remove", nil)}},
	{attrFP, []plantValue{fixed("1 byte", binAV([]byte{1})), fixed("33 bytes", binAV(make([]byte, 33))),
		fixed("fp(a) as hex string", strAV(fp("a").String())), fixed("fp(a)", binAV(fpBytes("a"))),
		fixed("fp(b)", binAV(fpBytes("b"))), fixed("remove", nil)}},
	{attrToken, []plantValue{fixed("0", numAV(0)), fixed("-1", numAV(-1)), fixed("1", numAV(1)), relTok(-1), relTok(1),
		fixed("1.5", &types.AttributeValueMemberN{Value: "1.5"}), fixed("9e18", numAV(9000000000000000000)),
		fixed("MaxToken", tokAV(idem.MaxToken)), fixed("MaxToken+1", &types.AttributeValueMemberN{Value: "9223372036854775808"}),
		fixed("string 5", strAV("5")), fixed("remove", nil)}},
	{attrLease, []plantValue{fixed("remove", nil), relTime(-time.Minute, ""), relTime(time.Hour, ""),
		relTime(-time.Minute, ".5"), fixed("-1", numAV(-1)), fixed("1e20", &types.AttributeValueMemberN{Value: "1e20"}),
		fixed("string", strAV("soon"))}},
	{attrExpires, []plantValue{relTime(-time.Minute, ""), relTime(time.Hour, ""), relTime(time.Hour, ".25"),
		fixed("1e20", &types.AttributeValueMemberN{Value: "1e20"}), fixed("-5", numAV(-5)), fixed("string", strAV("later")),
		fixed("remove", nil)}},
	{attrResp, []plantValue{fixed("remove", nil), fixed("one byte", binAV([]byte{0})), fixed("deadbeef", binAV([]byte{0xde, 0xad, 0xbe, 0xef})),
		fixed("valid", binAV(idem.EncodeResponse(&idem.Response{Status: 201, Body: []byte("planted")}))),
		fixed("string", strAV("ok"))}},
	{"zz", []plantValue{fixed("extra string", strAV("extra")), fixed("extra map", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"a": numAV(1)}})}},
	{attrTTL, []plantValue{fixed("past", numAV(1)), fixed("string", strAV("x")), fixed("remove", nil)}},
}

// plantItem changes key's item at random with pick: one to three
// attributes set to (or removed as) a value of plantAttrs, one after the
// other. It returns what it did.
func plantItem(ctx context.Context, s *Store, key string, pick storetest.Chooser) (string, error) {
	var did []string
	for range 1 + pick("changes", 3) {
		a := plantAttrs[pick("attribute", len(plantAttrs))]
		v := a.values[pick("value", len(a.values))]
		got, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(s.opts.Table), Key: map[string]types.AttributeValue{attrPK: strAV(recordPK(key))}, ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return "", err
		}
		in := &dynamodb.UpdateItemInput{
			TableName:                aws.String(s.opts.Table),
			Key:                      map[string]types.AttributeValue{attrPK: strAV(recordPK(key))},
			ExpressionAttributeNames: map[string]string{"#a": a.name},
		}
		if av := v.av(got.Item); av == nil {
			in.UpdateExpression = aws.String("REMOVE #a")
		} else {
			in.UpdateExpression = aws.String("SET #a = :v")
			in.ExpressionAttributeValues = map[string]types.AttributeValue{":v": av}
		}
		if _, err := s.api.UpdateItem(ctx, in); err != nil {
			return "", fmt.Errorf("plant %s = %s: %w", a.name, v.name, err)
		}
		did = append(did, a.name+" = "+v.name)
	}
	return strings.Join(did, ", "), nil
}

// counterValue is the fencing counter of key's family (0 when unset).
func counterValue(t interface{ Fatalf(string, ...any) }, s *Store, key string) uint64 {
	out, err := s.api.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(s.opts.Table), Key: map[string]types.AttributeValue{attrPK: strAV(s.counterPK(key))}, ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("counter: %v", err)
	}
	n, _ := out.Item[attrCounter].(*types.AttributeValueMemberN)
	if n == nil {
		return 0
	}
	v, err := strconv.ParseUint(n.Value, 10, 64)
	if err != nil {
		t.Fatalf("counter %q: %v", n.Value, err)
	}
	return v
}

// TestPlantedRecords is the fail-closed property on DynamoDB: an item
// created through the store (in progress, completed or failed), changed by
// plantItem, then held to storetest.Planted, and the key's fencing counter
// never goes back. pgregory.net/rapid shrinks a failing case to the
// fewest, simplest changes (-rapid.checks sets the count, 100 by default).
func TestPlantedRecords(t *testing.T) {
	s := newStore(t, Options{CounterFamilies: 1})
	run := 0
	var issued idem.Token
	plant := func(ctx context.Context, key string, draw func(string, int) int) (string, error) {
		return plantItem(ctx, s, key, draw)
	}
	rapid.Check(t, func(rt *rapid.T) {
		run++
		key := fmt.Sprintf("planted-%d", run)
		draw := func(label string, n int) int { return rapid.IntRange(0, n-1).Draw(rt, label) }
		issued = storetest.PlantedRun(rt, s, key, fp("a"), issued, draw, plant,
			func(t storetest.TB) uint64 { return counterValue(t, s, key) })
	})
	t.Logf("%d planted records", run)
}

func fpBytes(s string) []byte { f := fp(s); return f[:] }
