package dynamostore

import (
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Usage is what the store has asked of DynamoDB since it was made: requests
// by kind and the capacity units they consumed. Successful requests count
// the units the service reported (ReturnConsumedCapacity TOTAL); a
// conditional write that the condition refused reports none, so the store
// counts what DynamoDB bills for it: the write units of the larger of the
// item it would have written and the item that is there (1 per KB, at
// least 1).
type Usage struct {
	Gets, Puts, Updates, Deletes int64
	// ConditionFailures counts the writes among Puts, Updates and Deletes
	// whose condition was refused.
	ConditionFailures int64
	// ReadUnits and WriteUnits are capacity units: for on-demand tables,
	// read request units and write request units.
	ReadUnits, WriteUnits float64
}

// Requests is the number of requests sent.
func (u Usage) Requests() int64 { return u.Gets + u.Puts + u.Updates + u.Deletes }

// Sub returns u less earlier, for the usage of a stretch of work.
func (u Usage) Sub(earlier Usage) Usage {
	return Usage{
		Gets: u.Gets - earlier.Gets, Puts: u.Puts - earlier.Puts,
		Updates: u.Updates - earlier.Updates, Deletes: u.Deletes - earlier.Deletes,
		ConditionFailures: u.ConditionFailures - earlier.ConditionFailures,
		ReadUnits:         u.ReadUnits - earlier.ReadUnits, WriteUnits: u.WriteUnits - earlier.WriteUnits,
	}
}

// usage is Usage kept with atomics; units in thousandths.
type usage struct {
	gets, puts, updates, deletes, failures atomic.Int64
	readMilli, writeMilli                  atomic.Int64
}

// Usage returns the requests and capacity units used so far.
func (s *Store) Usage() Usage {
	u := &s.usage
	return Usage{
		Gets: u.gets.Load(), Puts: u.puts.Load(), Updates: u.updates.Load(), Deletes: u.deletes.Load(),
		ConditionFailures: u.failures.Load(),
		ReadUnits:         float64(u.readMilli.Load()) / 1000, WriteUnits: float64(u.writeMilli.Load()) / 1000,
	}
}

// settleWrite counts a conditional write of a record in n and sorts out
// its answer err: the refusal when the condition failed (the caller counts
// what it is billed); a backend error for op, ambiguous since the write may
// have been applied; or, on success, nil after adding the units the write
// consumed (consumed is called only then).
func (s *Store) settleWrite(op string, n *atomic.Int64, err error, consumed func() *types.ConsumedCapacity) (*types.ConditionalCheckFailedException, error) {
	n.Add(1)
	if ccf := conditionFailed(err); ccf != nil {
		return ccf, nil
	}
	if err != nil {
		return nil, backendError(op, err, true)
	}
	s.usage.consumed(consumed())
	return nil, nil
}

// consumed adds the units a response reported.
func (u *usage) consumed(c *types.ConsumedCapacity) {
	if c == nil {
		return
	}
	if c.ReadCapacityUnits != nil || c.WriteCapacityUnits != nil {
		if c.ReadCapacityUnits != nil {
			u.readMilli.Add(int64(*c.ReadCapacityUnits*1000 + 0.5))
		}
		if c.WriteCapacityUnits != nil {
			u.writeMilli.Add(int64(*c.WriteCapacityUnits*1000 + 0.5))
		}
		return
	}
	if c.CapacityUnits != nil {
		// Only a total: a GetItem reports reads, a write reports writes; the
		// caller adds those with readUnits/writeUnits instead.
		u.writeMilli.Add(int64(*c.CapacityUnits*1000 + 0.5))
	}
}

// readConsumed adds a read's units (a total is read units for GetItem).
func (u *usage) readConsumed(c *types.ConsumedCapacity) {
	if c == nil {
		return
	}
	switch {
	case c.ReadCapacityUnits != nil:
		u.readMilli.Add(int64(*c.ReadCapacityUnits*1000 + 0.5))
	case c.CapacityUnits != nil:
		u.readMilli.Add(int64(*c.CapacityUnits*1000 + 0.5))
	}
}

// refusedWrite counts the write units DynamoDB bills for a conditional
// write refused by its condition: the larger of the two items, 1 per KB
// started, at least 1.
func (u *usage) refusedWrite(newSize, oldSize int) {
	u.failures.Add(1)
	size := max(newSize, oldSize)
	units := max(1, (size+1023)/1024)
	u.writeMilli.Add(int64(units) * 1000)
}
