package history

// Clock reads the run's shared monotonic timeline. The workload driver takes
// a Clock so tests can inject a fake one.
type Clock interface {
	// Now returns nanoseconds on the timeline; successive calls never
	// decrease.
	Now() int64
}

// ClockFunc adapts a function to Clock.
type ClockFunc func() int64

// Now calls f.
func (f ClockFunc) Now() int64 { return f() }

// MonotonicClock is the Clock that calls Now.
type MonotonicClock struct{}

// Now returns history.Now().
func (MonotonicClock) Now() int64 { return Now() }

var _ Clock = MonotonicClock{}
