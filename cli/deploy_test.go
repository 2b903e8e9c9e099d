package cli

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/idembench/idembench/internal/testenv"
)

// job is the part of a Kubernetes Job the manifests use: decoded with
// known fields only, so a misspelt or misplaced field fails the check.
type job struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct{ Name string }
	Spec       struct {
		BackoffLimit   int    `yaml:"backoffLimit"`
		CompletionMode string `yaml:"completionMode"`
		Completions    int    `yaml:"completions"`
		Parallelism    int    `yaml:"parallelism"`
		Template       struct {
			Spec struct {
				RestartPolicy string `yaml:"restartPolicy"`
				Containers    []struct {
					Name    string   `yaml:"name"`
					Image   string   `yaml:"image"`
					Command []string `yaml:"command"`
					Args    []string `yaml:"args"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// TestKubernetesManifests checks deploy/kubernetes/idembench.yaml offline
// and then runs its commands: a coordinator Job and an Indexed Job of
// workers that agree on the NATS URL, the run name and the number of
// workers, and whose commands, with the cluster's addresses replaced by
// this machine's servers and the index Kubernetes sets filled in, make a
// passing joined run.
func TestKubernetesManifests(t *testing.T) {
	f, err := os.Open("../deploy/kubernetes/idembench.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	jobs := map[string]job{}
	for {
		var j job
		if err := dec.Decode(&j); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("manifest: %v", err)
		}
		if j.APIVersion != "batch/v1" || j.Kind != "Job" || len(j.Spec.Template.Spec.Containers) != 1 || j.Spec.Template.Spec.RestartPolicy != "Never" {
			t.Fatalf("manifest %q: want one batch/v1 Job with one container and restartPolicy Never: %+v", j.Metadata.Name, j)
		}
		jobs[j.Metadata.Name] = j
	}
	co, wk := jobs["idembench-coordinator"], jobs["idembench-workers"]
	coArgs, wArgs := co.Spec.Template.Spec.Containers[0].Args, wk.Spec.Template.Spec.Containers[0].Args
	if len(coArgs) == 0 || len(wArgs) == 0 || coArgs[0] != "run" || wArgs[0] != "worker" {
		t.Fatalf("want a coordinator running `run` and workers running `worker`: %v, %v", coArgs, wArgs)
	}
	n, _ := strconv.Atoi(flagValue(coArgs, "--workers"))
	switch {
	case wk.Spec.CompletionMode != "Indexed" || wk.Spec.Completions != n || wk.Spec.Parallelism != n || n == 0:
		t.Fatalf("workers Job: completionMode %q, completions %d, parallelism %d; want Indexed and --workers %d for both",
			wk.Spec.CompletionMode, wk.Spec.Completions, wk.Spec.Parallelism, n)
	case flagValue(coArgs, "--join") != flagValue(wArgs, "--join") || flagValue(coArgs, "--join-run") != flagValue(wArgs, "--run"):
		t.Fatalf("coordinator and workers disagree on the NATS URL or the run name: %v, %v", coArgs, wArgs)
	case flagValue(wArgs, "--index") != "$(JOB_COMPLETION_INDEX)":
		t.Fatalf("workers' --index %q, want the index Kubernetes sets", flagValue(wArgs, "--index"))
	}
	if testing.Short() {
		return
	}

	// Run the commands here: the cluster's addresses become this
	// machine's servers, the run is short and gets a name of its own.
	natsURL, redisURL := testenv.NATSURL(t), testenv.RedisURL(t)
	run := "k8s-" + strconv.FormatInt(int64(os.Getpid()), 36)
	local := func(args []string, index int) []string {
		out := make([]string, len(args))
		for i, a := range args {
			switch {
			case a == flagValue(coArgs, "--join"):
				a = natsURL
			case a == flagValue(coArgs, "--redis-url"):
				a = redisURL
			case a == flagValue(coArgs, "--join-run"):
				a = run
			case a == "$(JOB_COMPLETION_INDEX)":
				a = strconv.Itoa(index)
			case i > 0 && args[i-1] == "--duration":
				a = "1s"
			case i > 0 && (args[i-1] == "--join-wait" || args[i-1] == "--wait"):
				a = "30s"
			}
			out[i] = a
		}
		return out
	}
	var wg sync.WaitGroup
	results := make([]cliResult, n)
	for i := range n {
		wg.Go(func() { results[i] = runCLI(t, local(wArgs, i)...) })
	}
	r := runCLI(t, local(coArgs, 0)...)
	wg.Wait()
	if r.code != exitOK {
		t.Fatalf("coordinator: exit %d\n%s%s", r.code, r.stdout, r.err)
	}
	for i, w := range results {
		if w.code != exitOK {
			t.Errorf("worker %d: exit %d\n%s", i, w.code, w.err)
		}
	}
	if !bytes.Contains([]byte(r.stdout), []byte("verdict")) && !strings.Contains(r.err, "verdict") {
		t.Errorf("no verdict printed:\n%s%s", r.stdout, r.err)
	}
}
