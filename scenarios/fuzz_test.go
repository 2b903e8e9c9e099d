package scenarios_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/scenarios"
	"github.com/idembench/idembench/workload"
)

// FuzzParse feeds the scenario loader arbitrary text. It must never panic;
// an error wraps ErrInvalid; a scenario it accepts is runnable: its
// workload passes workload.Check, its fault schedule passes chaos.New at
// its own duration, and the limits of the package doc hold.
func FuzzParse(f *testing.F) {
	entries, err := os.ReadDir("builtin")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		b, err := fs.ReadFile(os.DirFS("builtin"), e.Name())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("name: x\nduration: 1s\nengine: {lease_ttl: 1ns}\nworkload: {clients: 3.5, rate: .nan}\n")
	f.Add("name: x\nduration: 1s\nengine: {lease_ttl: 1s}\nfaults:\n  - {kind: pause, duration: 100000h, count: 1000000000, window: [.nan, 1]}\n")
	f.Add("name: [x]\nduration: {a: 1}\n")
	f.Fuzz(func(t *testing.T, src string) {
		s, err := scenarios.Parse(strings.NewReader(src), filepath.Join("fuzz", "in.yaml"))
		if err != nil {
			if s != nil || !errors.Is(err, scenarios.ErrInvalid) {
				t.Fatalf("scenario %v, error %v (want nil and ErrInvalid)", s, err)
			}
			return
		}
		cfg, err := workload.Check(s.Workload(0))
		if err != nil {
			t.Fatalf("accepted scenario fails workload.Check: %v\n%s", err, src)
		}
		if cfg.Clients < 1 || cfg.Clients > workload.MaxClients || cfg.Engine.LeaseTTL < workload.MinLeaseTTL {
			t.Fatalf("accepted scenario beyond the limits: %+v", cfg)
		}
		if _, err := chaos.New(s.ChaosConfig(1, 0)); err != nil {
			t.Fatalf("accepted scenario's faults fail chaos.New: %v\n%s", err, src)
		}
		if len(s.Faults) > scenarios.MaxFaults || s.Name == "" || len(s.Name) > scenarios.MaxNameLen {
			t.Fatalf("accepted scenario beyond the limits: %+v", s)
		}
		for _, fl := range s.Faults {
			if fl.Duration > scenarios.MaxPause || fl.Count > chaos.MaxCount {
				t.Fatalf("accepted fault beyond the limits: %+v", fl)
			}
		}
	})
}
