package cli

// The command line draws the plots of every report it writes and runs the
// network faults of its fault flags: it links the two parts of the tree
// that the harness leaves out so that a store author's test through
// harness/harnesstest stays lean (gonum/plot and its fonts; the embedded
// toxiproxy with its metrics and logging). Both register themselves when
// imported.
import (
	_ "github.com/idembench/idembench/chaos/backendfault/netproxy"
	_ "github.com/idembench/idembench/reports/plots"
)
