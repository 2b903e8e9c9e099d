package dynamostore

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
)

func TestConformance(t *testing.T) {
	s := newStore(t, Options{})
	storetest.Run(t, storetest.Config{
		New: func(t *testing.T) idem.Store { return s },
		Corrupt: func(t *testing.T, st idem.Store, key string) {
			t.Helper()
			setAttr(t, st.(*Store), key, attrResp, binAV([]byte{0xde, 0xad, 0xbe, 0xef}))
		},
		Plant:     storetest.PlantWith(plantItem),
		PlantRuns: 40,
	})
}

// setAttr overwrites one attribute of key's record behind the store's back.
func setAttr(t testing.TB, s *Store, key, name string, v types.AttributeValue) {
	t.Helper()
	_, err := s.api.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.opts.Table),
		Key:                       map[string]types.AttributeValue{attrPK: strAV(recordPK(key))},
		UpdateExpression:          aws.String("SET #a = :v"),
		ExpressionAttributeNames:  map[string]string{"#a": name},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": v},
	})
	if err != nil {
		t.Fatalf("set %s of %q: %v", name, key, err)
	}
}
