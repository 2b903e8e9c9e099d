package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/idembench/idembench/harness"
)

// invokedAs returns how the user started this binary, for the replay
// line: "go run ./cmd/idembench" when it runs from the go build cache (go
// run), else the name typed when it is the one on $PATH, else the path as
// typed.
func invokedAs() string {
	exe, err := os.Executable()
	if err != nil {
		exe = ""
	}
	bi, _ := debug.ReadBuildInfo()
	return commandName(exe, os.Args[0], goBuildDirs(), bi, func(name string) string {
		p, err := exec.LookPath(name)
		if err != nil {
			return ""
		}
		return p
	})
}

// goBuildDirs returns the directories go run leaves its executables in:
// the temporary go-build work directories and the build cache ($GOCACHE,
// else the user cache directory's go-build).
func goBuildDirs() []string {
	dirs := []string{filepath.Join(os.TempDir(), "go-build")}
	if c := os.Getenv("GOCACHE"); c != "" && c != "off" {
		dirs = append(dirs, c)
	} else if c, err := os.UserCacheDir(); err == nil {
		dirs = append(dirs, filepath.Join(c, "go-build"))
	}
	return dirs
}

// commandName is invokedAs on its inputs: exe the executable's path, arg0
// the name it was started by, buildDirs the go build directories (a
// prefix: the temporary ones are go-build<number>), bi the build info
// (nil when there is none), lookPath the $PATH lookup ("" when the name
// is not there). A test binary is never taken for go run.
func commandName(exe, arg0 string, buildDirs []string, bi *debug.BuildInfo, lookPath func(string) string) string {
	if exe != "" && !strings.HasSuffix(exe, ".test") && bi != nil && bi.Path != "" {
		for _, d := range buildDirs {
			if strings.HasPrefix(exe, d) {
				return "go run " + goRunTarget(bi)
			}
		}
	}
	base := filepath.Base(arg0)
	if base == arg0 && lookPath(base) != "" {
		return base
	}
	if p := lookPath(base); p != "" && exe != "" && sameFile(p, exe) {
		return base
	}
	return harness.ShellQuote(arg0)
}

// goRunTarget returns the package go run was given, as bi records it: a
// path relative to the module root for a build of a work tree
// ("./cmd/idembench"), else the package at its version.
func goRunTarget(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return bi.Path + "@" + v
	}
	if bi.Path == bi.Main.Path {
		return "."
	}
	if rel, ok := strings.CutPrefix(bi.Path, bi.Main.Path+"/"); ok {
		return "./" + rel
	}
	return bi.Path
}

// sameFile reports whether the paths a and b name the same file.
func sameFile(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}
