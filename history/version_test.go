package history

import (
	"runtime/debug"
	"testing"
)

func TestToolVersion(t *testing.T) {
	cases := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"work tree", debug.BuildInfo{Main: debug.Module{Path: Module, Version: "(devel)"}}, "devel"},
		{"go install @version", debug.BuildInfo{Main: debug.Module{Path: Module, Version: "v0.4.0"}}, "v0.4.0"},
		{"a store author's binary", debug.BuildInfo{Main: debug.Module{Path: "example.com/mystore"},
			Deps: []*debug.Module{{Path: "golang.org/x/sync", Version: "v0.9.0"}, {Path: Module, Version: "v0.3.1"}}}, "v0.3.1"},
		{"no idembench in it", debug.BuildInfo{Main: debug.Module{Path: "example.com/other", Version: "v1.0.0"}}, "devel"},
	}
	for _, c := range cases {
		if got := toolVersion(&c.bi); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if ToolVersion() != "devel" {
		t.Errorf("a test binary of the work tree: %q, want devel", ToolVersion())
	}
}
