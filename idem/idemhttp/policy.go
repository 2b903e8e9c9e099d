package idemhttp

import (
	"fmt"
	"strings"
)

// ReplayPolicy decides which handler responses are stored and replayed and
// which release the key for a retry (Options.ReplayPolicy). The zero value
// is PolicyIETF.
type ReplayPolicy string

// The replay policies.
const (
	// PolicyIETF stores and replays 2xx and 4xx (the request was processed,
	// or refused for good) and releases the key on 5xx, so that a retry
	// after a server error runs again, as the IETF Idempotency-Key draft
	// lets a server do. It is the default.
	PolicyIETF ReplayPolicy = "ietf"
	// PolicyStripe stores every response, errors included: a 500 is
	// replayed to every retry with the same key, as Stripe does.
	PolicyStripe ReplayPolicy = "stripe"
	// PolicyCache2xxOnly stores only 2xx; any 4xx or 5xx releases the key,
	// so a retry runs again.
	PolicyCache2xxOnly ReplayPolicy = "cache-2xx-only"
)

// ReplayPolicies lists the policies, in the order above.
func ReplayPolicies() []ReplayPolicy {
	return []ReplayPolicy{PolicyIETF, PolicyStripe, PolicyCache2xxOnly}
}

// ParseReplayPolicy returns the policy named s ("ietf", "stripe" or
// "cache-2xx-only"); "" is PolicyIETF. Any other name is an error that
// lists the valid ones.
func ParseReplayPolicy(s string) (ReplayPolicy, error) {
	if s == "" {
		return PolicyIETF, nil
	}
	for _, p := range ReplayPolicies() {
		if string(p) == s {
			return p, nil
		}
	}
	names := make([]string, 0, 3)
	for _, p := range ReplayPolicies() {
		names = append(names, string(p))
	}
	return "", fmt.Errorf("idemhttp: unknown replay policy %q (valid: %s)", s, strings.Join(names, ", "))
}

// StoreStatus reports whether p stores a response with status (true) or
// releases the key (false). An unknown policy stores nothing.
func (p ReplayPolicy) StoreStatus(status int) bool {
	switch p {
	case PolicyIETF, "":
		return status < 500
	case PolicyStripe:
		return true
	case PolicyCache2xxOnly:
		return status >= 200 && status < 300
	}
	return false
}
