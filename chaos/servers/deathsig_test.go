//go:build linux

package servers

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestServersDieWithParent starts a server from a helper process, kills the
// helper with SIGKILL (so no Stop and no StopAll runs), and checks that the
// kernel's parent-death signal took the server down and that SweepStale
// removes the directory left behind.
func TestServersDieWithParent(t *testing.T) {
	for _, kind := range []string{"redis", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			if kind == "redis" {
				needRedis(t)
			} else {
				needPostgres(t)
			}
			// The helper's temp dir, where the postgres user can enter.
			base := searchableTempDir(t, "servers-deathsig-")

			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"="+kind, "TMPDIR="+base)
			cmd.Stderr = os.Stderr
			stdin, err := cmd.StdinPipe() // kept open: the helper waits on it
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := make(chan string, 1)
			go func() {
				line, _ := bufio.NewReader(stdout).ReadString('\n')
				lines <- line
			}()
			var line string
			select {
			case line = <-lines:
			case <-time.After(60 * time.Second):
				_ = cmd.Process.Kill()
				<-lines
				_ = cmd.Wait()
				t.Fatal("helper did not report its server within 60s")
			}
			pid, port, dir, err := readyLine(line)
			if err != nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatal(err)
			}
			if filepath.Dir(dir) != base {
				t.Errorf("helper's server dir %s is not in %s", dir, base)
			}
			if !processAlive(pid) {
				t.Fatalf("helper's server %d is not running", pid)
			}

			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			assertGone(t, pid, port, dir, "")

			if _, err := os.Stat(dir); err != nil {
				t.Fatalf("expected the killed helper's dir to remain until swept: %v", err)
			}
			shmID := -1
			if kind == "postgres" {
				shmID = postmasterShmID(t, filepath.Join(dir, "data", "postmaster.pid"))
			}
			if err := sweepStale(base); err != nil {
				t.Fatal(err)
			}
			if shmID >= 0 {
				var d unix.SysvShmDesc
				if _, err := unix.SysvShmCtl(shmID, unix.IPC_STAT, &d); err == nil {
					t.Errorf("shared memory segment %d of the killed postmaster left behind (nattch %d)", shmID, d.Nattch)
				}
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("sweepStale left %s (stat: %v)", dir, err)
			}
		})
	}
}

func TestSweepStaleTouchesOnlyDeadOwners(t *testing.T) {
	base := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(name string, ownerPID int) string {
		t.Helper()
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if ownerPID != 0 {
			if err := writeMarker(filepath.Join(dir, ownerFile), ownerPID); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	live := mk(dirPrefix+"redis-live", os.Getpid())
	stale := mk(dirPrefix+"redis-stale", dead.Process.Pid)
	unmarked := mk(dirPrefix+"redis-unmarked", 0)
	foreign := mk("other-dir", dead.Process.Pid)
	if err := sweepStale(base); err != nil {
		t.Fatal(err)
	}
	for dir, wantKept := range map[string]bool{live: true, stale: false, unmarked: true, foreign: true} {
		_, err := os.Stat(dir)
		if kept := err == nil; kept != wantKept {
			t.Errorf("%s kept = %v, want %v", filepath.Base(dir), kept, wantKept)
		}
	}
}

// postmasterShmID returns the System V segment id on line 7 of a
// postmaster.pid file.
func postmasterShmID(t *testing.T, pidFile string) int {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 7 || len(strings.Fields(lines[6])) != 2 {
		t.Fatalf("no shared memory line in %s: %q", pidFile, b)
	}
	id, err := strconv.Atoi(strings.Fields(lines[6])[1])
	if err != nil {
		t.Fatal(err)
	}
	return id
}
