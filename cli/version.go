package cli

import (
	"context"
	"runtime/debug"

	"github.com/redis/go-redis/v9"
)

// module is the idembench module path, looked up in the build info.
const module = "github.com/idembench/idembench"

// buildVersion returns the idembench module version this binary was built
// with (from debug.ReadBuildInfo: the main module, or the dependency of a
// binary that imports cli), or "devel" for a build from a work tree.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := ""
	if bi.Main.Path == module {
		v = bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == module {
			v = d.Version
		}
	}
	if v == "" || v == "(devel)" {
		return "devel"
	}
	return v
}

// silentRedis is a go-redis logger that drops everything: the CLI says
// what went wrong with a server itself (with a hint), and a raw go-redis
// log line before that only confuses.
type silentRedis struct{}

func (silentRedis) Printf(context.Context, string, ...any) {}

// quietRedis silences go-redis's own logging for the process.
func quietRedis() { redis.SetLogger(silentRedis{}) }
