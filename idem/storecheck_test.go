package idem

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateAcquire(t *testing.T) {
	if err := ValidateAcquire("k", "p1", time.Second); err != nil {
		t.Fatalf("valid arguments: %v", err)
	}
	if err := ValidateAcquire("", "", time.Second); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("empty key: err = %v, want ErrInvalidKey", err)
	}
	if err := ValidateAcquire("k", "a b", time.Second); !errors.Is(err, ErrInvalidPolicy) {
		t.Errorf("policy with a space: err = %v, want ErrInvalidPolicy", err)
	}
	for _, ttl := range []time.Duration{0, -time.Second} {
		err := ValidateAcquire("k", "", ttl)
		if err == nil || !strings.Contains(err.Error(), `key "k"`) || !strings.Contains(err.Error(), "not positive") {
			t.Errorf("lease TTL %v: err = %v, want one naming the key and the TTL", ttl, err)
		}
	}
}

func TestBatchFailed(t *testing.T) {
	boom := errors.New("boom")
	acq := AcquireBatchFailed(3, boom)
	fin := FinishBatchFailed(3, boom)
	if len(acq) != 3 || len(fin) != 3 {
		t.Fatalf("len = %d, %d; want 3, 3", len(acq), len(fin))
	}
	for i := range 3 {
		if acq[i].Err != boom || acq[i].Lease != nil || acq[i].Record != nil || fin[i] != boom {
			t.Errorf("entry %d: %+v, %v; want only err", i, acq[i], fin[i])
		}
	}
}
