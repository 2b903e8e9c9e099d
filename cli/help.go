package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/alecthomas/kong"
)

// description is the opening of `idembench --help` (and of `idembench`
// with no arguments): what the tool is, where to start, the exit codes.
var description = `Idempotency-key engine harness: drive, inject faults, record, check.

Quick start: idembench run (about 10 s on the memory backend, no server needed; it prints the verdict and writes a run directory). idembench help COMMAND prints a command's flags, examples and exit codes.

` + allExitCodesHelp

// helpCmd is `idembench help [COMMAND]`. Run rewrites it into
// `COMMAND --help` (or `--help`) before parsing, so its Run is reached
// only with arguments helpArgs would refuse.
type helpCmd struct {
	Command []string `arg:"" optional:"" help:"The command (and subcommand) whose help to print." placeholder:"COMMAND"`
}

func (c *helpCmd) Run() error {
	return usage("help: want idembench help [COMMAND]")
}

// Help is the detailed help of `idembench help --help`.
func (c *helpCmd) Help() string {
	return `Prints a command's help, the same as "idembench COMMAND --help"; with no
command, the list of commands (as "idembench" with no arguments does).

Examples:

    idembench help
    idembench help run

` + exitHelp(exitOK, exitUsage)
}

// helpArgs rewrites the command lines that ask for help without --help:
// no arguments at all prints the usage (exit 0), and `help [COMMAND
// [SUBCOMMAND]]` becomes `[COMMAND [SUBCOMMAND]] --help`. A COMMAND that
// is not a visible command of parser, or a flag after help, is a usage
// error naming the commands.
func helpArgs(parser *kong.Kong, args []string) ([]string, error) {
	if len(args) == 0 {
		return []string{"--help"}, nil
	}
	if args[0] != "help" {
		return args, nil
	}
	names := visibleCommands(parser)
	rest := args[1:]
	switch {
	case len(rest) == 0:
		return []string{"--help"}, nil
	case slices.Contains(rest, "--help") || slices.Contains(rest, "-h"):
		return args, nil // help's own help
	case slices.ContainsFunc(rest, func(a string) bool { return strings.HasPrefix(a, "-") }):
		return nil, usage("help %s: want idembench help [COMMAND [SUBCOMMAND]], COMMAND one of %s", strings.Join(rest, " "), strings.Join(names, ", "))
	case !slices.Contains(names, rest[0]):
		return nil, usage("help: no command %q; the commands are %s", rest[0], strings.Join(names, ", "))
	}
	return append(slices.Clone(rest), "--help"), nil
}

// visibleCommands returns the names of parser's commands that --help
// lists, in its order.
func visibleCommands(parser *kong.Kong) []string {
	var names []string
	for _, n := range parser.Model.Children {
		if n.Type == kong.CommandNode && !n.Hidden {
			names = append(names, n.Name)
		}
	}
	return names
}

// exitMeanings says what each exit code means, for exitHelp.
var exitMeanings = map[int]string{
	exitOK:           "pass",
	exitViolation:    "safety violation",
	exitUsage:        "usage error (every flag is checked before anything starts)",
	exitInconclusive: "inconclusive (the check ran out of time)",
	exitThreshold:    "threshold missed",
	exitEnvironment:  "environment error (a backend, broker or service unreachable, or dead during the run by no planned fault)",
	exitDeviation:    "protocol deviation (idembench http: a MUST of the declared protocol broken, no safety violation; exit 1 under --strict)",
	exitInterrupted:  "interrupted (SIGINT or SIGTERM: ends within 2 s and says what was written)",
}

// exitCodesHelp lists the exit codes of the commands that run or check a
// history; allExitCodesHelp every code idembench returns (6 only from
// idembench http).
var (
	exitCodesHelp    = exitHelp(exitOK, exitViolation, exitUsage, exitInconclusive, exitThreshold, exitEnvironment, exitInterrupted)
	allExitCodesHelp = exitHelp(exitOK, exitViolation, exitUsage, exitInconclusive, exitThreshold, exitEnvironment, exitDeviation, exitInterrupted)
)

// exitHelp returns the "Exit codes:" paragraph of a command's --help,
// listing the given codes (those the command can return) with their
// meaning. 0 is "pass" for a command that gives a verdict (one that can
// exit 1), else "done".
func exitHelp(codes ...int) string {
	parts := make([]string, len(codes))
	for i, c := range codes {
		what := exitMeanings[c]
		if c == exitOK && !slices.Contains(codes, exitViolation) {
			what = "done"
		}
		parts[i] = fmt.Sprintf("%d %s", c, what)
	}
	return "Exit codes: " + strings.Join(parts, ", ") + "."
}
