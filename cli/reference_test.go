package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReferenceDocsNameEveryField: docs/reference/scenario.md and
// target.md name every field of the YAML schema the loaders accept (the
// yaml tags of scenarios/load.go and blackbox/load.go), so a field added
// to a loader without its documentation fails here.
func TestReferenceDocsNameEveryField(t *testing.T) {
	tag := regexp.MustCompile("yaml:\"([a-z_0-9]+)\"")
	for src, doc := range map[string]string{
		"../scenarios/load.go": "../docs/reference/scenario.md",
		"../blackbox/load.go":  "../docs/reference/target.md",
	} {
		code, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		fields := tag.FindAllStringSubmatch(string(code), -1)
		if len(fields) < 10 {
			t.Fatalf("%s: found %d yaml fields, the pattern is stale", src, len(fields))
		}
		for _, m := range fields {
			if !strings.Contains(string(text), "`"+m[1]+"`") && !strings.Contains(string(text), "."+m[1]+"`") {
				t.Errorf("%s does not document the field %s of %s", doc, m[1], src)
			}
		}
	}
}
