// Package yamldur is the duration field of the project's YAML files (the
// scenario catalog and black-box targets): a time.Duration written as
// "250ms", "2s" or 0, never negative.
package yamldur

import (
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a YAML duration; D is its value (0 when absent).
type Duration struct{ D time.Duration }

// UnmarshalYAML reads a scalar such as 250ms, 2s or 0, naming the line of
// anything else and of a negative duration.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration such as 250ms", n.Line)
	}
	if n.Value == "0" {
		*d = Duration{}
		return nil
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (want e.g. 250ms or 2s)", n.Line, n.Value)
	}
	if v < 0 {
		return fmt.Errorf("line %d: negative duration %s", n.Line, n.Value)
	}
	*d = Duration{D: v}
	return nil
}
