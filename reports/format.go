package reports

import (
	"bufio"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// num formats x for people: three significant digits below 1000
// ("0.000853", "12.4", "999"), whole numbers with thousands separators from
// 1000 up ("12,346"). NaN and infinities print as "-".
func num(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "-"
	case x == 0:
		return "0"
	case math.Abs(x) >= 999.5:
		return group(strconv.FormatFloat(math.Round(x), 'f', 0, 64))
	}
	digits := 2 - int(math.Floor(math.Log10(math.Abs(x))))
	s := strconv.FormatFloat(x, 'f', max(digits, 0), 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// count formats an integer with thousands separators.
func count(n int) string { return group(strconv.Itoa(n)) }

// group inserts commas every three digits of a whole number.
func group(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// percent formats a ratio as a percentage with three significant digits.
func percent(r float64) string { return num(r*100) + "%" }

// plural returns "1 CPU" or "8 CPUs".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return count(n) + " " + word + "s"
}

// writeFile creates path, lets write fill it through a buffer, and closes
// it, returning the first error.
func writeFile(path string, write func(w io.Writer) error) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		return err
	}
	return bw.Flush()
}

// FormatNumber formats x as every report does: three significant digits
// below 1000 ("0.000853", "12.4", "999"), whole numbers with thousands
// separators from 1000 up ("12,346"); NaN and infinities print as "-".
func FormatNumber(x float64) string { return num(x) }

// FormatCount formats n as every report does, with thousands separators
// ("12,346").
func FormatCount(n int) string { return count(n) }
