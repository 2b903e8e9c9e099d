package idem_test

import (
	"errors"
	"testing"

	"github.com/idembench/idembench/idem"
)

func TestResponseEncodingRoundTrip(t *testing.T) {
	for _, r := range []idem.Response{
		{Status: 200},
		{Status: 404, Header: map[string][]string{"B": {"2"}, "A": {"1", ""}}, Body: []byte{0, 1, 2}},
	} {
		got, err := idem.DecodeResponse(idem.EncodeResponse(&r))
		if err != nil || !got.Equal(&r) {
			t.Fatalf("round trip of %+v = %+v, %v", r, got, err)
		}
	}
}

func TestDecodeResponseRejectsGarbage(t *testing.T) {
	good := idem.EncodeResponse(&idem.Response{Status: 200, Body: []byte("abc")})
	for name, b := range map[string][]byte{
		"empty":     nil,
		"version":   append([]byte{9}, good[1:]...),
		"truncated": good[:len(good)-1],
		"trailing":  append(append([]byte{}, good...), 0),
		"huge len":  {1, 200, 1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
		// Forms EncodeResponse never writes: a padded number, headers out
		// of order or twice. Decoding them would let two encodings stand
		// for one response.
		"padded status":   {1, 0xc8, 0x81, 0x00, 0, 3, 'a', 'b', 'c'},
		"padded body len": {1, 0xc8, 0x01, 0, 0x83, 0x00, 'a', 'b', 'c'},
		"header order":    {1, 0xc8, 0x01, 2, 1, 'B', 0, 1, 'A', 0, 0},
		"header twice":    {1, 0xc8, 0x01, 2, 1, 'A', 0, 1, 'A', 0, 0},
	} {
		if _, err := idem.DecodeResponse(b); !errors.Is(err, idem.ErrCorruptRecord) {
			t.Errorf("%s: err = %v, want ErrCorruptRecord", name, err)
		}
	}
}

func TestResponseSizeCap(t *testing.T) {
	r := idem.Response{Status: 200, Header: map[string][]string{"Key": {"vv"}}, Body: make([]byte, 10)}
	if r.Size() != 15 {
		t.Fatalf("Size = %d, want 15", r.Size())
	}
	if err := r.CheckSize(14); !errors.Is(err, idem.ErrResponseTooLarge) {
		t.Fatalf("CheckSize(14) = %v", err)
	}
	if err := r.CheckSize(15); err != nil {
		t.Fatalf("CheckSize(15) = %v", err)
	}
	big := idem.Response{Body: make([]byte, idem.DefaultMaxResponseSize+1)}
	if err := big.CheckSize(0); !errors.Is(err, idem.ErrResponseTooLarge) {
		t.Fatalf("default cap not applied: %v", err)
	}
	if err := big.CheckSize(-1); err != nil {
		t.Fatalf("negative cap should be unlimited: %v", err)
	}
}

func TestAmbiguousAndBackendErrors(t *testing.T) {
	base := errors.New("i/o timeout")
	amb := idem.MarkAmbiguous(idem.BackendError("complete", base))
	if !idem.Ambiguous(amb) || !errors.Is(amb, idem.ErrBackend) || !errors.Is(amb, base) {
		t.Fatalf("ambiguous backend error lost its identity: %v", amb)
	}
	if idem.Ambiguous(base) || idem.MarkAmbiguous(nil) != nil || idem.BackendError("x", nil) != nil {
		t.Fatal("nil or plain errors misclassified")
	}
}

func TestRecordValidate(t *testing.T) {
	resp := &idem.Response{Status: 200}
	for name, r := range map[string]idem.Record{
		"zero token":       {Status: idem.StatusCompleted, Response: resp},
		"unknown status":   {Status: 7, Token: 1, Response: resp},
		"completed no rsp": {Status: idem.StatusCompleted, Token: 1},
		"progress w/ rsp":  {Status: idem.StatusInProgress, Token: 1, Response: resp},
	} {
		if err := r.Validate(); !errors.Is(err, idem.ErrCorruptRecord) {
			t.Errorf("%s: Validate = %v, want ErrCorruptRecord", name, err)
		}
	}
	if _, err := idem.ParseStatus("done"); !errors.Is(err, idem.ErrCorruptRecord) {
		t.Fatalf("ParseStatus(done) = %v", err)
	}
}
