package reports_test

// The tests of package reports check the plots too: the test binary links
// the Plotter of reports/plots, which registers itself when imported (a
// test in package reports cannot import it: reports/plots imports reports).
import _ "github.com/idembench/idembench/reports/plots"
