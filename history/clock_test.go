package history

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestNowMonotonic(t *testing.T) {
	prev := Now()
	for range 100000 {
		n := Now()
		if n < prev {
			t.Fatalf("Now went back from %d to %d", prev, n)
		}
		prev = n
	}
}

// TestNowAcrossProcesses runs this test binary as a child that prints Now;
// the child's reading must fall between two readings of the parent.
func TestNowAcrossProcesses(t *testing.T) {
	if os.Getenv("HISTORY_PRINT_NOW") == "1" {
		fmt.Printf("now=%d\n", Now())
		return
	}
	if !CrossProcess {
		t.Skip("Now is process-local on " + runtime.GOOS)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	for range 3 {
		cmd := exec.Command(exe, "-test.run=^TestNowAcrossProcesses$")
		cmd.Env = append(os.Environ(), "HISTORY_PRINT_NOW=1")
		before := Now()
		out, err := cmd.Output()
		after := Now()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		_, rest, ok := strings.Cut(string(out), "now=")
		if !ok {
			t.Fatalf("child printed %q", out)
		}
		child, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		// Allow each process's calibration error (tens of microseconds
		// at worst under load).
		const slack = 200_000
		if child < before-slack || child > after+slack {
			t.Errorf("child Now %d outside parent window [%d, %d]", child, before, after)
		}
	}
}

func BenchmarkNow(b *testing.B) {
	var s int64
	for b.Loop() {
		s += Now()
	}
	_ = s
}
