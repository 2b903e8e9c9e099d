package multiproc

import (
	"errors"
	"fmt"

	"github.com/idembench/idembench/idem"
)

// WireError is an error on its way between a coordinator and a worker,
// with the idem sentinel it wraps and whether it is ambiguous, so that
// errors.Is and idem.Ambiguous still hold at the other end.
type WireError struct {
	Kind      string
	Msg       string
	Ambiguous bool
}

// wireSentinels are the errors a WireError names by Kind.
var wireSentinels = []struct {
	kind string
	err  error
}{
	{"lease-lost", idem.ErrLeaseLost},
	{"not-found", idem.ErrNotFound},
	{"corrupt", idem.ErrCorruptRecord},
	{"invalid-key", idem.ErrInvalidKey},
	{"too-large", idem.ErrResponseTooLarge},
	{"backend", idem.ErrBackend},
	{"conn-closed", ErrConnClosed},
}

// ToWire returns err ready to send; nil for nil.
func ToWire(err error) *WireError {
	if err == nil {
		return nil
	}
	w := &WireError{Msg: err.Error(), Ambiguous: idem.Ambiguous(err)}
	for _, s := range wireSentinels {
		if errors.Is(err, s.err) {
			w.Kind = s.kind
			break
		}
	}
	return w
}

// Err returns the error w carries: one that wraps its sentinel, if any,
// and is marked ambiguous if it was; nil for a nil w.
func (w *WireError) Err() error {
	if w == nil {
		return nil
	}
	err := errors.New(w.Msg)
	for _, s := range wireSentinels {
		if s.kind == w.Kind {
			err = fmt.Errorf("%w (other end: %s)", s.err, w.Msg)
		}
	}
	if w.Ambiguous {
		err = idem.MarkAmbiguous(err)
	}
	return err
}
