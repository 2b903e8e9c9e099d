package cli

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idembench/idembench/internal/testenv"
)

// TestWorkers runs the CLI with worker processes on Redis: a real crash
// (self-SIGKILL after the effect, no recovery) is caught; SIGSTOPped
// holders against a fenced sink are not a false alarm; and an interrupted
// run leaves no worker process and nothing in the temporary directory.
func TestWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs worker processes for several seconds")
	}
	url := testenv.RedisURL(t)
	bin := buildCLI(t)
	tmp := t.TempDir()
	env := append(os.Environ(), "IDEM_REDIS_URL="+url, "TMPDIR="+tmp)
	run := func(args ...string) (int, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		return runBinary(t, cmd)
	}
	cases := []struct {
		args []string
		want int
	}{
		{[]string{"--scenario", "crash-after-effect", "--sink", "plain", "--no-recovery"}, exitViolation},
		{[]string{"--scenario", "gc-pause", "--sink", "fenced"}, exitOK},
	}
	for _, c := range cases {
		args := append([]string{"run", "--backend", "redis", "--workers", "2", "--duration", "2500ms", "--seed", "4", "--no-save"}, c.args...)
		if code, out := run(args...); code != c.want {
			t.Fatalf("%v: exit %d, want %d\n%s", args, code, c.want, out)
		}
	}

	t.Run("progress", func(t *testing.T) {
		// Off a terminal a plain progress line is logged every 5 s; the
		// calls it counts come from the workers.
		code, out := run("run", "--backend", "redis", "--workers", "2", "--duration", "5500ms", "--seed", "4", "--no-save")
		if code != exitOK {
			t.Fatalf("exit %d\n%s", code, out)
		}
		line := lineWith(out, "idembench: 5")
		var rate, calls float64
		if _, err := fmt.Sscanf(line[strings.Index(line, "·")+len("· "):], "%g calls/s · %g calls", &rate, &calls); err != nil || calls <= 0 {
			t.Fatalf("progress line %q: %v; want calls counted from the workers\n%s", line, err, out)
		}
	})

	t.Run("join", func(t *testing.T) {
		// Workers started apart from the coordinator join through NATS,
		// each with the command the coordinator prints.
		if code, out := run("run", "--backend", "redis", "--join", testenv.NATSURL(t), "--no-save"); code != exitUsage || !strings.Contains(out, "--join needs --workers") {
			t.Fatalf("--join without --workers: exit %d\n%s", code, out)
		}
		cmd := exec.Command(bin, "run", "--backend", "redis", "--workers", "2", "--join", testenv.NATSURL(t), "--join-wait", "30s",
			"--scenario", "duplicates", "--duration", "1500ms", "--seed", "4", "--no-save")
		cmd.Env = env
		var out strings.Builder // stdout, written by exec's copier until Wait
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The second line of the notice is the command, with "i" for the index.
		buf := make([]byte, 4096)
		var notice string
		for !strings.Contains(notice, "--index i\n") {
			n, err := stderr.Read(buf)
			if err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("no join notice: %v\n%s", err, notice)
			}
			notice += string(buf[:n])
		}
		var args []string
		for l := range strings.Lines(notice) {
			if strings.Contains(l, " worker --join ") {
				args = strings.Fields(l)[1:] // the binary, as it was invoked, is bin
			}
		}
		if len(args) == 0 {
			t.Fatalf("no worker command in the notice:\n%s", notice)
		}
		var workers []*exec.Cmd
		for i := range 2 {
			w := exec.Command(bin, append(args[:len(args)-1], fmt.Sprint(i))...)
			w.Env = env
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			workers = append(workers, w)
		}
		rest := make(chan []byte)
		go func() { b, _ := io.ReadAll(stderr); rest <- b }()
		tail := <-rest // the pipe must be read to the end before Wait
		err = cmd.Wait()
		for _, w := range workers {
			w.Wait()
		}
		if err != nil {
			t.Fatalf("joined run: %v\n%s%s%s", err, notice, tail, out.String())
		}
	})

	t.Run("interrupt", func(t *testing.T) {
		cmd := exec.Command(bin, "run", "--backend", "redis", "--workers", "2", "--duration", "30s", "--no-save")
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for len(workerPIDs(bin)) < 2 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if n := len(workerPIDs(bin)); n < 2 {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("%d workers running, want 2", n)
		}
		cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			t.Fatal("coordinator did not exit within 15s of SIGINT")
		}
		if pids := workerPIDs(bin); len(pids) > 0 {
			t.Fatalf("workers left running after SIGINT: %v", pids)
		}
		// The workers send their histories over the protocol: nothing
		// goes through the temporary directory.
		if left, _ := os.ReadDir(tmp); len(left) > 0 {
			t.Fatalf("left in the temporary directory: %v", left)
		}
	})
}

// TestWorkersWithBackendFaults runs worker processes while the backend is
// restarted or its replies are dropped, the effect ledger staying on the
// configured server: a Redis without persistence forgets completions
// (caught), PostgreSQL and a Redis with AOF always keep them (pass), and
// dropped replies give unknown outcomes but no false alarm.
func TestWorkersWithBackendFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs worker processes against private servers")
	}
	env := append(os.Environ(), "IDEM_REDIS_URL="+testenv.RedisURL(t), "IDEM_POSTGRES_URL="+testenv.PostgresURL(t))
	bin := buildCLI(t)
	cases := []struct {
		args    []string
		want    int
		unknown bool // some calls must end unknown
	}{
		{[]string{"--backend", "redis", "--restart-at", "600ms,1200ms"}, exitViolation, false},
		{[]string{"--backend", "redis", "--restart-at", "600ms,1200ms", "--redis-persistence", "aof-always"}, exitOK, false},
		{[]string{"--backend", "postgres", "--restart-at", "800ms"}, exitOK, false},
		{[]string{"--backend", "redis", "--net-fault", "drop-replies@500ms+500ms"}, exitOK, true},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args[1:], " "), func(t *testing.T) {
			args := append([]string{"run", "--workers", "2", "--scenario", "duplicates", "--duration", "2s", "--seed", "5", "--no-save", "--no-progress"}, c.args...)
			cmd := exec.Command(bin, args...)
			cmd.Env = env
			code, out := runBinary(t, cmd)
			if code != c.want {
				t.Fatalf("exit %d, want %d\n%s", code, c.want, out)
			}
			if !strings.Contains(out, "faults injected: ") || strings.Contains(out, "faults injected: 0") {
				t.Errorf("no fault window recorded:\n%s", out)
			}
			if c.unknown && !strings.Contains(out, " unknown ") {
				t.Errorf("no unknown outcome while replies were dropped:\n%s", out)
			}
			_, replay, _ := strings.Cut(out, "\nreplay: ")
			for _, a := range c.args[2:] {
				if strings.HasPrefix(a, "--") && !strings.Contains(replay, a+" ") {
					t.Errorf("the replay command lacks %s: %s", a, replay)
				}
			}
		})
	}
}

// workerPIDs lists the running worker processes of binary bin.
func workerPIDs(bin string) []string {
	var pids []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 1 && args[0] == bin && args[1] == "worker" {
			if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && strings.Contains(string(st), ") Z ") {
				continue // a zombie is gone
			}
			pids = append(pids, e.Name())
		}
	}
	return pids
}
