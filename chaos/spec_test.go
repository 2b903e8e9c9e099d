package chaos_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idembench/idembench/chaos"
	"github.com/idembench/idembench/history"
	"github.com/idembench/idembench/idem"
)

func TestParseWindow(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		in      string
		want    chaos.Fault
		wantErr bool
	}{
		{"drop-replies@1s+400ms", chaos.Fault{Kind: history.FaultDropReplies, Start: time.Second, Duration: 400 * ms}, false},
		{"latency@0s+1s", chaos.Fault{Kind: history.FaultLatency, Latency: 50 * ms, Duration: time.Second}, false},
		{"latency:20ms@2s+1s", chaos.Fault{Kind: history.FaultLatency, Latency: 20 * ms, Start: 2 * time.Second, Duration: time.Second}, false},
		{"latency:20ms~10ms@200ms+200ms", chaos.Fault{Kind: history.FaultLatency, Latency: 20 * ms, Jitter: 10 * ms, Start: 200 * ms, Duration: 200 * ms}, false},
		{"latency:20ms~30ms@0s+1s", chaos.Fault{}, true},
		{"latency:20ms~x@0s+1s", chaos.Fault{}, true},
		{"partition@1s", chaos.Fault{}, true},
		{"partition", chaos.Fault{}, true},
		{"partition@-1s+1s", chaos.Fault{}, true},
		{"partition@1s+0s", chaos.Fault{}, true},
		{"flood@1s+1s", chaos.Fault{}, true},
		{"crash@1s+1s", chaos.Fault{}, true},
		{"reset:5ms@1s+1s", chaos.Fault{}, true},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := chaos.ParseWindow(c.in)
			if (err != nil) != c.wantErr {
				t.Fatalf("err %v, want error %t", err, c.wantErr)
			}
			if c.wantErr {
				return
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Fatalf("(-want +got)\n%s", d)
			}
			back, err := chaos.ParseWindow(got.String())
			if err != nil || back != got {
				t.Fatalf("String %q parses to %+v (%v), want %+v", got.String(), back, err, got)
			}
		})
	}
	if _, err := chaos.ParseWindow("reset"); !errors.Is(err, chaos.ErrSyntax) {
		t.Fatalf("no @: %v, want ErrSyntax", err)
	}
}

func TestParseAim(t *testing.T) {
	got, err := chaos.ParseAim("latency:5ms+1s")
	want := chaos.Fault{Kind: history.FaultLatency, Latency: 5 * time.Millisecond, Duration: time.Second, Point: idem.PointAfterFn}
	if err != nil || got != want || !got.Aimed() {
		t.Fatalf("ParseAim = %+v, %v; want %+v, aimed", got, err, want)
	}
	if back, err := chaos.ParseAim(got.String()); err != nil || back != got {
		t.Fatalf("String %q parses to %+v (%v)", got.String(), back, err)
	}
	for _, in := range []string{"partition@1s+1s", "partition", "partition+0s", "flood+1s", "pause+1s"} {
		if f, err := chaos.ParseAim(in); err == nil {
			t.Errorf("ParseAim(%q) = %+v, want an error", in, f)
		}
	}
}

// TestValidateKinds: one Fault plans the faults of every layer, and each
// kind refuses the fields it does not use.
func TestValidateKinds(t *testing.T) {
	cases := []struct {
		name string
		f    chaos.Fault
		want string // substring of the error, "" for valid
	}{
		{"network window", chaos.Fault{Kind: history.FaultPartition, Start: time.Second, Duration: time.Second}, ""},
		{"aimed network", chaos.Fault{Kind: history.FaultReset, Point: idem.PointAfterFn, Duration: time.Second}, ""},
		{"restart at an offset", chaos.Fault{Kind: history.FaultRestart, Start: time.Second}, ""},
		{"aimed restart", chaos.Fault{Kind: history.FaultRestart, Point: idem.PointAfterFn, Duration: time.Second}, ""},
		{"kill of a service", chaos.Fault{Kind: history.FaultKill, Start: time.Second, Duration: time.Second}, ""},
		{"latency without delay", chaos.Fault{Kind: history.FaultLatency, Duration: time.Second}, "positive delay"},
		{"jitter above latency", chaos.Fault{Kind: history.FaultLatency, Latency: time.Millisecond, Jitter: time.Second}, "jitter"},
		{"partition with latency", chaos.Fault{Kind: history.FaultPartition, Latency: time.Millisecond}, "no latency"},
		{"restart with a count", chaos.Fault{Kind: history.FaultRestart, Count: 2}, "fires once"},
		{"network with a window end", chaos.Fault{Kind: history.FaultReset, Start: time.Second, End: 2 * time.Second}, "fires once"},
		{"crash with latency", chaos.Fault{Kind: history.FaultCrash, Count: 1, Latency: time.Millisecond}, "no latency"},
		{"failover", chaos.Fault{Kind: history.FaultFailover}, "not planned"},
		{"clock skew", chaos.Fault{Kind: history.FaultClockSkew}, "not planned"},
		{"unknown kind", chaos.Fault{Kind: "flood"}, `unknown fault kind "flood"`},
		{"negative duration", chaos.Fault{Kind: history.FaultKill, Duration: -time.Second}, "negative duration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.f.Validate(time.Minute)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("Validate = %v, want nil", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("Validate = %v, want an error containing %q", err, c.want)
			}
		})
	}
	_, err := chaos.New(chaos.Config{RunFor: time.Minute, Faults: []chaos.Fault{{Kind: history.FaultPartition, Duration: time.Second}}})
	if err == nil || !strings.Contains(err.Error(), "injects crash and pause") {
		t.Fatalf("New with a network fault: %v, want a refusal", err)
	}
}

func TestLabel(t *testing.T) {
	for _, c := range []struct {
		f    chaos.Fault
		want string
	}{
		{chaos.Fault{Kind: history.FaultCrash}, "crash at before-fn"},
		{chaos.Fault{Kind: history.FaultPause, Point: idem.PointAfterAcquire, Duration: time.Second, ThenFail: true}, "pause 1s at after-acquire then fail"},
		{chaos.Fault{Kind: history.FaultLatency, Latency: 50 * time.Millisecond}, "latency 50ms"},
		{chaos.Fault{Kind: history.FaultLatency, Latency: 50 * time.Millisecond, Jitter: time.Millisecond}, "latency 50ms±1ms"},
		{chaos.Fault{Kind: history.FaultDropReplies}, "drop-replies"},
	} {
		if got := c.f.Label(); got != c.want {
			t.Errorf("Label(%+v) = %q, want %q", c.f, got, c.want)
		}
	}
}
