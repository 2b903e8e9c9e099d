package harness

// StoreUsage is what a store asked of its backend during a run, for the
// cost model of sweep and compare: requests sent and capacity units
// consumed, and, for a backend billed per request, the bill at a stated
// price table.
type StoreUsage struct {
	Requests              int64
	ReadUnits, WriteUnits float64
	// Dollars is the bill of the run's requests at the store's price
	// table; Prices says which (region, date, source). Both are empty for
	// a backend not billed per request.
	Dollars float64
	Prices  string
	// RoundTrips is the round trips the requests took (a pipeline or a
	// batch is one); 0 when the store does not count them.
	RoundTrips int64
	// ServerCPUSeconds is the CPU time the backend's server used during
	// the run, as ServerCPU names its source (such as Redis INFO cpu; other
	// clients of the same server add to it). When the server exposes none,
	// ServerCPUSeconds is 0 and ServerCPU starts with "n/a" and says why;
	// both are empty for a store that does not try.
	ServerCPUSeconds float64
	ServerCPU        string
	// Outcomes splits the Do calls whose claim the store saw (Calls) and
	// their requests and round trips by what the claim found: "first
	// execution", "replay" or "conflict". Empty when the store does not
	// tell them apart.
	Outcomes []OutcomeUsage
}

// OutcomeUsage is the usage of the Do calls of one outcome.
type OutcomeUsage struct {
	Outcome              string
	Calls                int64
	Requests, RoundTrips int64
}

// UsageReporter is implemented by stores that count their requests (the
// reference engine's DynamoDB store). Run reads it once the traffic
// (clients, drain and probes) has ended, into Outcome.Usage.
type UsageReporter interface {
	RunUsage() StoreUsage
}
