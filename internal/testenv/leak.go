package testenv

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// LeakSettle is how long MainWithoutLeaks lets goroutines end by
// themselves before it calls them leaked: an idem.Engine that was not
// closed keeps its heartbeat scheduler for one tick (a quarter of the
// heartbeat interval, 2.5 s with the default lease) after its last
// execution, which is by design.
const LeakSettle = 10 * time.Second

// MainWithoutLeaks runs the tests of m and fails them (exit 1) when a
// goroutine they started is still running LeakSettle after they are done
// (goleak). A package's TestMain is then one line:
//
//	func TestMain(m *testing.M) { testenv.MainWithoutLeaks(m) }
func MainWithoutLeaks(m *testing.M) {
	code := m.Run()
	if code == 0 {
		var err error
		for deadline := time.Now().Add(LeakSettle); ; {
			if err = goleak.Find(); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines still running after the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
