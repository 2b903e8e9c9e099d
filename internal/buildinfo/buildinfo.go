// Package buildinfo says which idembench version a binary was built from,
// for idembench --version and idemctl --version alike.
package buildinfo

import "runtime/debug"

// Module is the idembench module path, looked up in the build info.
const Module = "github.com/idembench/idembench"

// Version returns the idembench module version this binary was built
// with (from debug.ReadBuildInfo: the main module, or the dependency of a
// binary that imports idembench), or "devel" for a build from a work tree
// or a binary without build info.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return version(bi)
}

// version is Version on bi.
func version(bi *debug.BuildInfo) string {
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
