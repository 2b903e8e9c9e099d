// Command idembench is the idembench CLI with the engines that ship with
// it: the reference engine and the known-bad designs. `idembench --help`
// lists the subcommands; package cli documents them. To test your own
// store, build this same file with your engine appended (README, "Test
// your own store").
package main

import (
	"os"

	"github.com/idembench/idembench/cli"
	"github.com/idembench/idembench/harness/engines"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], engines.Builtin()...))
}
