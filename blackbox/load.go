package blackbox

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"github.com/idembench/idembench/internal/yamldur"
)

// targetFile is the YAML schema of a target file.
type targetFile struct {
	Name        string          `yaml:"name"`
	BaseURL     string          `yaml:"base_url"`
	Start       *startYAML      `yaml:"start"`
	Operation   operationYAML   `yaml:"operation"`
	Oracle      oracleYAML      `yaml:"oracle"`
	Conformance conformanceYAML `yaml:"conformance"`
}

type startYAML struct {
	Command      []string          `yaml:"command"`
	Env          map[string]string `yaml:"env"`
	Dir          string            `yaml:"dir"`
	Ready        string            `yaml:"ready"`
	ReadyTimeout duration          `yaml:"ready_timeout"`
}

type operationYAML struct {
	Method       string            `yaml:"method"`
	Path         string            `yaml:"path"`
	Headers      map[string]string `yaml:"headers"`
	Body         string            `yaml:"body"`
	KeyHeader    string            `yaml:"key_header"`
	Success      []int             `yaml:"success"`
	ResourceID   string            `yaml:"resource_id"`
	ReplayHeader string            `yaml:"replay_header"`
	AmountMin    int64             `yaml:"amount_min"`
	AmountMax    int64             `yaml:"amount_max"`

	MismatchStatus   []int `yaml:"mismatch_status"`
	InProgressStatus []int `yaml:"in_progress_status"`
	ConflictStatus   []int `yaml:"conflict_status"`
	MissingKeyStatus []int `yaml:"missing_key_status"`
	RetryStatus      []int `yaml:"retry_status"`
	FailedStatus     []int `yaml:"failed_status"`
}

type oracleYAML struct {
	Kind        string   `yaml:"kind"`
	KeyHeader   string   `yaml:"key_header"`
	Latency     duration `yaml:"latency"`
	URL         string   `yaml:"url"`
	PostgresURL string   `yaml:"postgres_url"`
	Query       string   `yaml:"query"`
}

type conformanceYAML struct {
	Skip             bool              `yaml:"skip"`
	IsolationPath    string            `yaml:"isolation_path"`
	IsolationHeaders map[string]string `yaml:"isolation_headers"`
	Deviations       map[string]string `yaml:"deviations"`
	Profile          string            `yaml:"profile"`
	Levels           map[string]string `yaml:"levels"`
	Fingerprint      fingerprintYAML   `yaml:"fingerprint"`
}

type fingerprintYAML struct {
	JSON    string `yaml:"json"`
	Numbers string `yaml:"numbers"`
	Query   string `yaml:"query"`
	// Excluded lists JSON pointers the fingerprint leaves out.
	Excluded []string `yaml:"excluded"`
}

// duration is a YAML duration: "250ms", "2s" or 0, never negative.
type duration = yamldur.Duration

// LoadTarget reads and validates the target file at path (see
// ParseTarget) and resolves start.dir against the file's directory: an
// empty dir is that directory, a relative one is taken from it, and a
// relative command path (./server) is found from dir. A file that cannot be read, or is larger than
// MaxTargetFileSize, is an ErrUsage error too: the command line named it.
func LoadTarget(path string) (*Target, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("target: %v", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxTargetFileSize {
		return nil, usagef("%s: %d bytes, larger than the limit of %d bytes (1 MiB) of a target file", path, st.Size(), MaxTargetFileSize)
	}
	t, err := ParseTarget(f, path)
	if err != nil {
		return nil, err
	}
	if t.Start != nil {
		t.Start.Dir = resolveDir(path, t.Start.Dir)
	}
	return t, nil
}

// resolveDir returns the start directory of the target file at path: dir
// relative to the file's directory (the file's directory when dir is
// empty), so that a target runs the same from anywhere.
func resolveDir(path, dir string) string {
	if filepath.IsAbs(dir) {
		return dir
	}
	base := filepath.Dir(path)
	if abs, err := filepath.Abs(base); err == nil {
		base = abs
	}
	return filepath.Join(base, dir)
}

// ParseTarget reads one target from strict YAML and validates it; source
// names it in errors. Every error wraps ErrUsage: an unknown field is
// named with its line, a bad value with its field, a document larger
// than MaxTargetFileSize with the limit (ParseTarget reads no further).
//
//	name: payments
//	start:
//	  command: [./httpserver, --addr, "{{.Addr}}", --downstream, "{{.DownstreamURL}}"]
//	  ready: /payments/none
//	operation:
//	  path: /payments
//	  headers: {Content-Type: application/json}
//	  body: '{"amount": {{.Amount}}, "currency": "EUR"}'
//	  resource_id: /id
//	  replay_header: "Idempotency-Replayed: true"
//	oracle:
//	  kind: downstream
//	conformance:
//	  isolation_path: /transfers
func ParseTarget(r io.Reader, source string) (*Target, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxTargetFileSize+1))
	if err != nil {
		return nil, usagef("%s: %v", source, err)
	}
	if len(b) > MaxTargetFileSize {
		return nil, usagef("%s: larger than the limit of %d bytes (1 MiB) of a target file", source, MaxTargetFileSize)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var f targetFile
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, usagef("%s: empty file", source)
		}
		return nil, usagef("%s: %v", source, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, usagef("%s: more than one YAML document", source)
	}
	t := f.target(source)
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

func (f *targetFile) target(source string) *Target {
	o := &f.Operation
	t := &Target{
		Name:    f.Name,
		BaseURL: f.BaseURL,
		Operation: Operation{
			Method: o.Method, Path: o.Path, Headers: o.Headers, Body: o.Body,
			KeyHeader: o.KeyHeader, Success: o.Success, ResourceID: o.ResourceID,
			ReplayHeader: o.ReplayHeader, AmountMin: o.AmountMin, AmountMax: o.AmountMax,
			Statuses: Statuses{
				Mismatch: o.MismatchStatus, InProgress: o.InProgressStatus, Conflict: o.ConflictStatus,
				MissingKey: o.MissingKeyStatus, Retry: o.RetryStatus, Failed: o.FailedStatus,
			},
		},
		Oracle: Oracle{
			Kind: f.Oracle.Kind, KeyHeader: f.Oracle.KeyHeader, Latency: f.Oracle.Latency.D,
			URL: f.Oracle.URL, PostgresURL: f.Oracle.PostgresURL, Query: f.Oracle.Query,
		},
		Conformance: Conformance{
			Skip: f.Conformance.Skip, IsolationPath: f.Conformance.IsolationPath,
			IsolationHeaders: f.Conformance.IsolationHeaders, Deviations: f.Conformance.Deviations,
			Profile: f.Conformance.Profile, Levels: f.Conformance.Levels,
			Fingerprint: FingerprintRules(f.Conformance.Fingerprint),
		},
		Source: source,
	}
	if s := f.Start; s != nil {
		t.Start = &Start{Command: s.Command, Env: s.Env, Dir: s.Dir, Ready: s.Ready, ReadyTimeout: s.ReadyTimeout.D}
	}
	return t
}
