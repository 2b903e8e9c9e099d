// Package dynamostore is an idem.Store on Amazon DynamoDB, through the AWS
// SDK for Go v2.
//
// # Table
//
// One table with a string partition key "pk" (CreateTable makes it, on
// demand, with the TTL attribute enabled). It holds two kinds of item:
//
//   - a record, pk "k:" + the idempotency key, with the attributes st
//     (status), fp (fingerprint, 32 bytes), tok (fencing token), lx (lease
//     expiry, Unix milliseconds; in progress only), ex (when the record is
//     logically gone, Unix milliseconds), resp (the encoded response;
//     completed and failed only) and ttl (ex in Unix seconds, for
//     DynamoDB's TTL deletion);
//   - a fencing counter, pk "c:" + a family number: the key's hash picks one
//     of Options.CounterFamilies counters. Counters carry no TTL and are
//     never deleted.
//
// # One conditional write per transition
//
// Acquire reads the record with one strongly consistent GetItem. A
// finished record, a live lease or another request's fingerprint is
// answered from that read: a duplicate costs one request. An absent key
// (no item, or past ex) or an expired lease with the caller's fingerprint
// is claimed with a token drawn from the key's counter (an atomic ADD) and
// one PutItem whose condition is "the item is still exactly as read"
// (attribute_not_exists(pk) for no item; equality on st, tok, ex, and fp
// and lx for a take-over). A claim that loses a race gets the item that won
// back in the same request (ReturnValuesOnConditionCheckFailure) and
// decides again. Heartbeat, Complete, Fail and Release are one UpdateItem
// or DeleteItem each, conditioned on the caller's token and fingerprint
// and on every rule the decoder applies to an in-progress record, so a
// corrupt item is never overwritten.
//
// # Tokens
//
// Every token comes from a family counter, so tokens of a key strictly
// increase across take-over, Release and retention expiry (the counter
// survives the record). A counter found at or below the token of a record
// it must replace (a restored or hand-edited table) is moved past that
// token before the claim (never backwards) and Options.OnCounterBehind is
// told.
//
// # Time
//
// DynamoDB has no server clock in conditions: leases and retention are
// judged by the clock of the process that writes or reads (Options.Clock).
// Clock skew between hosts shortens or lengthens a lease by the skew; keep
// hosts synchronised (NTP) and the lease TTL well above the skew.
//
// # Retention
//
// A record past ex is absent for every call at once; DynamoDB's TTL
// deletes the item later (typically within a few days). Nothing relies on
// the deletion.
//
// # Limits
//
// A DynamoDB item holds at most 400 KB. Complete and Fail refuse a response
// whose item would exceed it with an error wrapping ErrItemTooLarge and
// idem.ErrResponseTooLarge, before sending anything; run the engine with
// idem.WithMaxResponseSize(dynamostore.MaxResponseSize) so that the engine
// stores such a response as a failure (500) instead.
//
// # Fail closed
//
// An item that does not decode by the rules of decodeItem (see item.go)
// makes every call on its key fail with idem.ErrCorruptRecord. Attributes
// the store does not write are ignored.
package dynamostore
