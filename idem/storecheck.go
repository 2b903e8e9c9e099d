package idem

import (
	"fmt"
	"time"
)

// ValidateLeaseTTL checks a lease TTL given to a store: it must be
// positive.
func ValidateLeaseTTL(leaseTTL time.Duration) error {
	if leaseTTL <= 0 {
		return fmt.Errorf("lease TTL %v is not positive", leaseTTL)
	}
	return nil
}

// ValidateAcquire checks the arguments of an acquire the way a store does
// before it asks its backend: the key (ValidateKey, the error wraps
// ErrInvalidKey), the fingerprint policy id (ValidatePolicy, the error
// wraps ErrInvalidPolicy) and the lease TTL (ValidateLeaseTTL, the error
// names the key). A store wraps the error with its own name and operation.
func ValidateAcquire(key, policy string, leaseTTL time.Duration) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := ValidatePolicy(policy); err != nil {
		return err
	}
	if err := ValidateLeaseTTL(leaseTTL); err != nil {
		return fmt.Errorf("key %q: %w", key, err)
	}
	return nil
}

// AcquireBatchFailed is the answer of BatchStore.AcquireBatch to n
// requests when one error hits the whole batch before any key is claimed:
// n results that all carry err.
func AcquireBatchFailed(n int, err error) []AcquireResult {
	out := make([]AcquireResult, n)
	for i := range out {
		out[i].Err = err
	}
	return out
}

// FinishBatchFailed is the answer of BatchStore.FinishBatch to n writes
// when one error hits the whole batch before any write is made: n errors
// that are all err.
func FinishBatchFailed(n int, err error) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}
