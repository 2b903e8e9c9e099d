package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idembench/idembench/idem"
)

// Defaults applied by New to zero fields of Options.
const (
	DefaultTable           = "idem_keys"
	DefaultTakeoverGrace   = 24 * time.Hour
	DefaultCounterFamilies = 64
)

// API is the part of *dynamodb.Client the store uses; a *dynamodb.Client
// satisfies it, and so does a wrapper that counts or traces requests.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// tableRE is DynamoDB's rule for table names.
var tableRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

// Options configures a Store. The zero value is valid: every zero field
// takes the default stated on it.
type Options struct {
	// Table is the table name. Default "idem_keys". It must match
	// ^[a-zA-Z0-9_.-]{3,255}$.
	Table string
	// Clock tells the time by which leases and retention are judged. Nil
	// means idem.SystemClock.
	Clock idem.Clock
	// TakeoverGrace is how long an in-progress record stays after its lease
	// expired, so that a later Acquire is a take-over (Lease.PrevToken set)
	// rather than a fresh claim. Default 24h; negative is an error.
	TakeoverGrace time.Duration
	// CounterFamilies is how many fencing counter items the keys are spread
	// over (by an FNV-1a hash of the key). Default 64; at most 1<<20. More
	// families spread the counters' write load over more partitions.
	// Changing it on a table in use is safe only upward from a value whose
	// counters are all at or below every new counter's value; keep it fixed.
	CounterFamilies int
	// OnCounterBehind is told when a counter was found at or below the token
	// of a record it had to replace, and was moved past it. Nil ignores it.
	OnCounterBehind func(key string, counter, token idem.Token)
}

// Store is an idem.Store on one DynamoDB table. It is safe for concurrent
// use; it does not own the client.
type Store struct {
	api   API
	opts  Options
	clock idem.Clock
	usage usage
}

var (
	_ idem.Store       = (*Store)(nil)
	_ idem.PolicyStore = (*Store)(nil)
)

// New returns a Store on opts.Table through api. It does not touch the
// table: call CreateTable once (or create it yourself, see the package
// doc). New fails only on invalid options.
func New(api API, opts Options) (*Store, error) {
	if api == nil {
		return nil, errors.New("dynamostore: nil client")
	}
	if opts.Table == "" {
		opts.Table = DefaultTable
	}
	if !tableRE.MatchString(opts.Table) {
		return nil, fmt.Errorf("dynamostore: table name %q does not match %s", opts.Table, tableRE)
	}
	switch {
	case opts.TakeoverGrace < 0:
		return nil, fmt.Errorf("dynamostore: negative take-over grace %v", opts.TakeoverGrace)
	case opts.CounterFamilies < 0 || opts.CounterFamilies > 1<<20:
		return nil, fmt.Errorf("dynamostore: counter families %d not in [1, %d]", opts.CounterFamilies, 1<<20)
	}
	if opts.TakeoverGrace == 0 {
		opts.TakeoverGrace = DefaultTakeoverGrace
	}
	if opts.CounterFamilies == 0 {
		opts.CounterFamilies = DefaultCounterFamilies
	}
	clock := opts.Clock
	if clock == nil {
		clock = idem.SystemClock{}
	}
	return &Store{api: api, opts: opts, clock: clock}, nil
}

// Options returns the options in effect, defaults filled in.
func (s *Store) Options() Options { return s.opts }

// recordPK is the partition key of key's record.
func recordPK(key string) string { return "k:" + key }

// counterPK is the partition key of the fencing counter of key's family.
func (s *Store) counterPK(key string) string {
	h := fnv.New32a()
	h.Write([]byte(key))
	return "c:" + strconv.Itoa(int(h.Sum32()%uint32(s.opts.CounterFamilies)))
}

// CreateTable creates opts.Table (partition key pk, on-demand capacity),
// waits until it is active and enables TTL deletion on the attribute ttl.
// A table that exists already is fine. A server that does not implement
// the TTL API (dynalite, some emulators) returns an error wrapping
// ErrTTLUnsupported after the table is ready: the store works, but
// nothing deletes expired items.
func (s *Store) CreateTable(ctx context.Context, client *dynamodb.Client) error {
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(s.opts.Table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(attrPK), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("dynamostore: create table %s: %w", s.opts.Table, err)
	}
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.opts.Table)}, 2*time.Minute); err != nil {
		return fmt.Errorf("dynamostore: wait for table %s: %w", s.opts.Table, err)
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(s.opts.Table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attrTTL), Enabled: aws.Bool(true)},
	})
	var apiErr smithy.APIError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &apiErr) && apiErr.ErrorCode() == "ValidationException" && isTTLAlreadyOn(apiErr.ErrorMessage()):
		return nil
	case errors.As(err, &apiErr) && (apiErr.ErrorCode() == "UnknownOperationException" || apiErr.ErrorCode() == "UnrecognizedClientException"):
		return fmt.Errorf("dynamostore: table %s: %w: %v", s.opts.Table, ErrTTLUnsupported, err)
	}
	return fmt.Errorf("dynamostore: enable TTL on %s: %w", s.opts.Table, err)
}

// isTTLAlreadyOn recognises DynamoDB's refusal to enable TTL twice.
func isTTLAlreadyOn(msg string) bool {
	return regexp.MustCompile(`(?i)already enabled`).MatchString(msg)
}
