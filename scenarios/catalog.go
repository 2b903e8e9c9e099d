package scenarios

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

//go:embed builtin/*.yaml
var builtin embed.FS

// Names returns the names of the built-in scenarios, sorted.
func Names() []string {
	entries, _ := fs.ReadDir(builtin, "builtin")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	slices.Sort(names)
	return names
}

// Builtin returns the built-in scenario called name. An unknown name is an
// error that lists the known ones.
func Builtin(name string) (*Scenario, error) {
	f, err := builtin.Open(path.Join("builtin", name+".yaml"))
	if err != nil {
		return nil, fmt.Errorf("%w: no built-in scenario %q (built-in: %s)", ErrInvalid, name, strings.Join(Names(), ", "))
	}
	defer f.Close()
	s, err := Parse(f, "builtin:"+name)
	if err != nil {
		return nil, err
	}
	if s.Name != name {
		return nil, fmt.Errorf("%w: builtin:%s: name field is %q", ErrInvalid, name, s.Name)
	}
	return s, nil
}

// BuiltinYAML returns the YAML file of the built-in scenario called name,
// as embedded in the binary: a starting point for a scenario of one's own.
// An unknown name is an error that lists the known ones.
func BuiltinYAML(name string) ([]byte, error) {
	b, err := fs.ReadFile(builtin, path.Join("builtin", name+".yaml"))
	if err != nil || strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("%w: no built-in scenario %q (built-in: %s)", ErrInvalid, name, strings.Join(Names(), ", "))
	}
	return b, nil
}

// Load returns the built-in scenario called nameOrPath, or, when the
// argument looks like a path (it contains a path separator or ends in
// .yaml or .yml), the scenario in that file.
func Load(nameOrPath string) (*Scenario, error) {
	if strings.ContainsAny(nameOrPath, `/\`) || strings.HasSuffix(nameOrPath, ".yaml") || strings.HasSuffix(nameOrPath, ".yml") {
		return LoadFile(nameOrPath)
	}
	return Builtin(nameOrPath)
}
