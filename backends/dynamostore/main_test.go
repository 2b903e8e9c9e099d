package dynamostore

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.uber.org/goleak"

	"github.com/idembench/idembench/backends/dynamostore/dynamotest"
	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
)

func TestMain(m *testing.M) {
	code := m.Run()
	dynamotest.Stop()
	if code == 0 {
		if err := goleak.Find(
			goleak.IgnoreTopFunction("github.com/idembench/idembench/idem.(*heartbeats).loop"),
			goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

// newStore returns a Store on a table of its own, created on the test
// server and deleted at cleanup.
func newStore(t testing.TB, opts Options) *Store {
	t.Helper()
	client := dynamotest.Client(dynamotest.URL(t))
	if opts.Table == "" {
		opts.Table = dynamotest.UniqueTable(t)
	}
	s, err := New(client, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.CreateTable(ctx, client); err != nil && !errors.Is(err, ErrTTLUnsupported) {
		t.Fatalf("CreateTable: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(opts.Table)}); err != nil {
			t.Errorf("delete table %s: %v", opts.Table, err)
		}
	})
	return s
}

func fp(s string) idem.Fingerprint { return idem.FingerprintString(s) }

var (
	mustAcquire = storetest.MustAcquire
	mustRecord  = storetest.MustRecord
)
