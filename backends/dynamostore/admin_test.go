package dynamostore

import (
	"testing"

	"github.com/idembench/idembench/backends/storetest"
	"github.com/idembench/idembench/idem"
)

func TestAdmin(t *testing.T) {
	storetest.Admin(t, storetest.Config{New: func(t *testing.T) idem.Store { return newStore(t, Options{}) }})
}
