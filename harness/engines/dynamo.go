package engines

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idembench/idembench/backends/dynamostore"
	"github.com/idembench/idembench/harness"
	"github.com/idembench/idembench/idem"
)

// DynamoTable is the reference engine's DynamoDB table.
const DynamoTable = "idembench_keys"

// dynamoClient returns a client for the endpoint in rawURL:
// http(s)://[ACCESS_KEY:SECRET@]HOST[:PORT][?region=REGION]. Without
// credentials in the URL it signs with dummy ones, which local emulators
// (dynalite, DynamoDB Local) accept; the region defaults to us-east-1.
func dynamoClient(rawURL string) (*dynamodb.Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, harness.ConfigError("dynamodb URL %q: want http(s)://[KEY:SECRET@]HOST[:PORT][?region=REGION]", harness.RedactURL(rawURL))
	}
	region := u.Query().Get("region")
	if region == "" {
		region = "us-east-1"
	}
	key, secret := "idem", "idem"
	if u.User != nil {
		key = u.User.Username()
		secret, _ = u.User.Password()
	}
	endpoint := u.Scheme + "://" + u.Host
	return dynamodb.New(dynamodb.Options{
		Region:       region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(key, secret, ""),
		HTTPClient: &http.Client{Transport: &http.Transport{
			MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second,
		}},
	}), nil
}

// openDynamo connects to env.URL, creates the table when it is missing
// and warns when the server has no TTL (nothing then deletes expired
// items; the store does not need it to).
func openDynamo(ctx context.Context, env harness.Env) (idem.Store, io.Closer, error) {
	client, err := dynamoClient(env.URL)
	if err != nil {
		return nil, nil, err
	}
	st, err := dynamostore.New(client, dynamostore.Options{Table: DynamoTable, Clock: env.Clock})
	if err != nil {
		return nil, nil, harness.ConfigError("dynamodb: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := st.CreateTable(cctx, client); errors.Is(err, dynamostore.ErrTTLUnsupported) {
		env.Warn("dynamodb: " + err.Error())
	} else if err != nil {
		return nil, nil, fmt.Errorf("dynamodb unreachable at %s: %w", harness.RedactURL(env.URL), err)
	}
	return dynamoRun{st}, nil, nil
}

// DynamoPrices is the price table the reference engine's DynamoDB runs are
// billed at (Outcome.Usage, the cost columns of sweep and compare).
// cli's --dynamo-prices replaces it with a file's.
var DynamoPrices = dynamostore.DefaultPrices

// dynamoRun is the reference engine's DynamoDB store: dynamostore with its
// usage reported to the harness (every capability of the store is kept:
// the methods are promoted).
type dynamoRun struct{ *dynamostore.Store }

var _ idem.PrefixLister = dynamoRun{}

// RunUsage implements harness.UsageReporter.
func (d dynamoRun) RunUsage() harness.StoreUsage {
	u := d.Usage()
	p := DynamoPrices
	return harness.StoreUsage{
		Requests: u.Requests(), ReadUnits: u.ReadUnits, WriteUnits: u.WriteUnits,
		Dollars: u.Cost(p),
		Prices:  fmt.Sprintf("%s on-demand, $%g/M writes, $%g/M reads (%s, %s)", p.Region, p.WritePerMillion, p.ReadPerMillion, p.Date, p.Source),
	}
}

// purgeDynamo deletes the records of the run whose keys start with prefix
// (the fencing counters are shared and stay).
func purgeDynamo(ctx context.Context, rawURL, prefix string) error {
	client, err := dynamoClient(rawURL)
	if err != nil {
		return err
	}
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(DynamoTable),
		FilterExpression:          aws.String("begins_with(pk, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "k:" + prefix}},
		ProjectionExpression:      aws.String("pk"),
	}
	for {
		out, err := client.Scan(ctx, in)
		if err != nil {
			return fmt.Errorf("dynamodb: scan: %w", err)
		}
		for _, item := range out.Items {
			pk, _ := item["pk"].(*types.AttributeValueMemberS)
			if pk == nil || !strings.HasPrefix(pk.Value, "k:"+prefix) {
				continue
			}
			if _, err := client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
				TableName: aws.String(DynamoTable), Key: map[string]types.AttributeValue{"pk": pk},
			}); err != nil {
				return fmt.Errorf("dynamodb: delete: %w", err)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
