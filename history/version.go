package history

import "runtime/debug"

// Module is the idembench module path, looked up in the build info.
const Module = "github.com/idembench/idembench"

// ToolVersion returns the idembench module version this binary was built
// with (from debug.ReadBuildInfo: the main module, or the dependency of a
// binary that imports idembench), or "devel" for a build from a work tree
// or a binary without build info. It is the version Header.Tool names, and
// what idembench --version and idemctl --version print.
func ToolVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return toolVersion(bi)
}

// toolVersion is ToolVersion on bi.
func toolVersion(bi *debug.BuildInfo) string {
	v := ""
	if bi.Main.Path == Module {
		v = bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == Module {
			v = d.Version
		}
	}
	if v == "" || v == "(devel)" {
		return "devel"
	}
	return v
}
