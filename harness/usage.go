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
}

// UsageReporter is implemented by stores that count their requests (the
// reference engine's DynamoDB store). Run reads it once the traffic
// (clients, drain and probes) has ended, into Outcome.Usage.
type UsageReporter interface {
	RunUsage() StoreUsage
}
