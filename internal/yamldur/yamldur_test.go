package yamldur

import (
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{"d: 250ms", 250 * time.Millisecond, ""},
		{"d: 2s", 2 * time.Second, ""},
		{"d: 0", 0, ""},
		{"", 0, ""},
		{"d: soon", 0, `line 1: "soon" is not a duration`},
		{"d: 5", 0, `"5" is not a duration`},
		{"d: -1s", 0, "line 1: negative duration -1s"},
		{"d: [1s]", 0, "line 1: want a duration"},
	}
	for _, tt := range tests {
		var v struct{ D Duration }
		err := yaml.Unmarshal([]byte(tt.in), &v)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%q: %v", tt.in, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%q: error %v, want %q", tt.in, err, tt.wantErr)
		case v.D.D != tt.want:
			t.Errorf("%q: %v, want %v", tt.in, v.D.D, tt.want)
		}
	}
}
