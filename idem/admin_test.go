package idem_test

import (
	"testing"

	"github.com/idembench/idembench/idem"
)

func TestListLimit(t *testing.T) {
	for _, tc := range []struct{ in, want int }{
		{-5, idem.DefaultListLimit},
		{0, idem.DefaultListLimit},
		{1, 1},
		{idem.DefaultListLimit + 1, idem.DefaultListLimit + 1},
	} {
		if got := idem.ListLimit(tc.in); got != tc.want {
			t.Errorf("ListLimit(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
