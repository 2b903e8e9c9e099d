package memstore_test

import (
	"testing"

	"github.com/idembench/idembench/internal/testenv"
)

// TestMain fails the package's tests when a goroutine they started is
// still running after they are done (testenv.MainWithoutLeaks).
func TestMain(m *testing.M) { testenv.MainWithoutLeaks(m) }
