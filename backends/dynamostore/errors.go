package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idembench/idembench/idem"
)

// Sentinel errors of the package.
var (
	// ErrItemTooLarge reports a record that would exceed DynamoDB's 400 KB
	// item limit. It comes wrapped together with idem.ErrResponseTooLarge;
	// nothing was written.
	ErrItemTooLarge = errors.New("dynamostore: item above DynamoDB's 400 KB limit")
	// ErrTTLUnsupported reports a server without the TimeToLive API
	// (CreateTable): the store works, expired items stay until deleted by
	// hand.
	ErrTTLUnsupported = errors.New("dynamostore: server does not support TTL")
	// ErrCounterExhausted reports a fencing counter at idem.MaxToken, or a
	// record carrying idem.MaxToken that must be taken over: no higher token
	// exists. It wraps idem.ErrCorruptRecord.
	ErrCounterExhausted = errors.New("dynamostore: fencing counter exhausted")
)

// errNoScan reports a client without Scan (see Scanner).
var errNoScan = errors.New("the client cannot Scan")

// backendError wraps a failed request as idem.ErrBackend. A write that may
// have reached the server (anything but an answer from the service or a
// context that ended before sending) is marked ambiguous. A context error
// stays visible to errors.Is.
func backendError(op string, err error, write bool) error {
	if err == nil {
		return nil
	}
	var apiErr smithy.APIError
	answered := errors.As(err, &apiErr)
	if isItemTooLarge(err) {
		return fmt.Errorf("dynamostore: %s: %w (%w): %v", op, ErrItemTooLarge, idem.ErrResponseTooLarge, err)
	}
	werr := idem.BackendError("dynamostore: "+op, err)
	if write && !answered && !errors.Is(err, context.Canceled) {
		return idem.MarkAmbiguous(werr)
	}
	return werr
}

// isItemTooLarge recognises the service's refusal of an item above 400 KB.
func isItemTooLarge(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "ValidationException" &&
		containsFold(apiErr.ErrorMessage(), "item size")
}

// conditionFailed returns the exception of a failed condition, or nil.
func conditionFailed(err error) *types.ConditionalCheckFailedException {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ccf
	}
	return nil
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
