package main

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMain runs idemctl's main instead of the tests when the variable
// mainEnv is set, so that a test can run the real command in a child
// process and see everything it writes.
func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

const mainEnv = "IDEMCTL_TEST_RUN_MAIN"

// TestIdemctlPrintsAStoreErrorOnce is issue #24 item 11: go-redis printed
// its own pool log lines (one per failed dial round) before idemctl's
// error. The child process runs the real main against a closed port.
func TestIdemctlPrintsAStoreErrorOnce(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	cmd := exec.Command(os.Args[0], "--store", "redis://"+addr+"/0", "stats")
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitBackend {
		t.Fatalf("exit: %v, want %d", err, exitBackend)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "idemctl: redis: ") || stdout.Len() != 0 {
		t.Fatalf("want one line of stderr, got:\n%s\nstdout: %s", stderr.String(), stdout.String())
	}
}
