package netfault_test

import (
	"errors"
	"testing"
	"time"

	"github.com/idembench/idembench/chaos/netfault"
)

func TestParseWindow(t *testing.T) {
	cases := []struct {
		in      string
		want    netfault.Timed
		wantErr bool
	}{
		{"drop-replies@1s+400ms", netfault.Timed{Fault: netfault.Fault{Kind: netfault.KindDropReplies}, At: time.Second, For: 400 * time.Millisecond}, false},
		{"latency@0s+1s", netfault.Timed{Fault: netfault.Fault{Kind: netfault.KindLatency, Latency: 50 * time.Millisecond}, For: time.Second}, false},
		{"latency:20ms@2s+1s", netfault.Timed{Fault: netfault.Fault{Kind: netfault.KindLatency, Latency: 20 * time.Millisecond}, At: 2 * time.Second, For: time.Second}, false},
		{"latency:20ms~10ms@200ms+200ms", netfault.Timed{Fault: netfault.Fault{Kind: netfault.KindLatency, Latency: 20 * time.Millisecond, Jitter: 10 * time.Millisecond}, At: 200 * time.Millisecond, For: 200 * time.Millisecond}, false},
		{"latency:20ms~30ms@0s+1s", netfault.Timed{}, true},
		{"latency:20ms~x@0s+1s", netfault.Timed{}, true},
		{"partition@1s", netfault.Timed{}, true},
		{"partition", netfault.Timed{}, true},
		{"partition@-1s+1s", netfault.Timed{}, true},
		{"partition@1s+0s", netfault.Timed{}, true},
		{"flood@1s+1s", netfault.Timed{}, true},
		{"reset:5ms@1s+1s", netfault.Timed{}, true},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := netfault.ParseWindow(c.in)
			if (err != nil) != c.wantErr {
				t.Fatalf("err %v, want error %t", err, c.wantErr)
			}
			if c.wantErr {
				return
			}
			if got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			back, err := netfault.ParseWindow(got.String())
			if err != nil || back != got {
				t.Fatalf("String %q parses to %+v (%v), want %+v", got.String(), back, err, got)
			}
		})
	}
	if _, err := netfault.ParseWindow("reset"); !errors.Is(err, netfault.ErrWindowSyntax) {
		t.Fatalf("no @: %v, want ErrWindowSyntax", err)
	}
}
