package multiproc

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// TestSweepStale removes the directory of a dead coordinator and keeps a
// live one's and names it does not know.
func TestSweepStale(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no true(1):", err)
	}
	base := t.TempDir()
	names := []string{
		tempDirPrefix + strconv.Itoa(dead.Process.Pid) + "-123",
		tempDirPrefix + strconv.Itoa(os.Getpid()) + "-456",
		tempDirPrefix + "nopid",
		"idembench-redis-789",
	}
	for _, n := range names {
		if err := os.Mkdir(filepath.Join(base, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := sweepStale(base); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(base)
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	want := names[1:]
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}
}
