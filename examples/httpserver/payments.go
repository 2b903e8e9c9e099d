package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"sync"

	"github.com/idembench/idembench/idem"
)

// payment is a created payment, as the API returns it.
type payment struct {
	ID       string `json:"id"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	Status   string `json:"status"`
}

// ledger is the side effect the idempotency key protects: every POST that
// reaches it creates a payment. It is safe for concurrent use.
type ledger struct {
	mu       sync.Mutex
	payments map[string]payment
	byCharge map[string]string // provider charge id to payment id
	next     int
}

func newLedger() *ledger {
	return &ledger{payments: make(map[string]payment), byCharge: make(map[string]string)}
}

// create creates a payment, or returns the payment already created for
// the provider's charge when charge is not empty: a request whose lease
// was taken over and the recovery hook that found its charge make the
// same payment.
func (l *ledger) create(amount int64, currency, charge string) payment {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id, ok := l.byCharge[charge]; ok && charge != "" {
		return l.payments[id]
	}
	l.next++
	p := payment{ID: fmt.Sprintf("pay_%06d", l.next), Amount: amount, Currency: currency, Status: "succeeded"}
	l.payments[p.ID] = p
	if charge != "" {
		l.byCharge[charge] = p.ID
	}
	return p
}

func (l *ledger) get(id string) (payment, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.payments[id]
	return p, ok
}

// count returns how many payments were created.
func (l *ledger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.payments)
}

// createPayment validates the body, charges the downstream provider when
// charge is not nil, and creates the payment. Its 4xx answers are stored
// and replayed like its 201s; a failed charge answers 502, which is not
// stored, so the client may retry with the same key.
func createPayment(w http.ResponseWriter, r *http.Request, l *ledger, charge chargeFunc) {
	var req struct {
		Amount   int64  `json:"amount"`
		Currency string `json:"currency"`
		// Meta and ClientRef are the client's own: not part of the
		// payment (--fingerprint-exclude can leave them out).
		Meta      json.RawMessage `json:"meta"`
		ClientRef string          `json:"client_ref"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body must be {\"amount\": <int>, \"currency\": \"<ISO 4217>\"}"})
		return
	}
	if req.Amount <= 0 {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": "amount must be a positive integer (minor units)"})
		return
	}
	if !isCurrency(req.Currency) {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": "currency must be three upper-case letters"})
		return
	}
	var chargeID string
	if charge != nil {
		var err error
		if chargeID, err = charge(r, req.Amount, req.Currency); err != nil {
			writeJSON(w, http.StatusBadGateway, map[string]string{"error": "payment provider: " + err.Error()})
			return
		}
	}
	resp := paymentResponse(l.create(req.Amount, req.Currency, chargeID))
	maps.Copy(w.Header(), resp.Header)
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}

// paymentResponse is the 201 of a created payment, as the handler sends
// it and the recovery hook stores it.
func paymentResponse(p payment) idem.Response {
	var body bytes.Buffer
	_ = json.NewEncoder(&body).Encode(p)
	return idem.Response{
		Status: http.StatusCreated,
		Header: http.Header{"Content-Type": {"application/json"}, "Location": {"/payments/" + p.ID}},
		Body:   body.Bytes(),
	}
}

func isCurrency(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := range 3 {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
