package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/orderlyhq/orderly/cmd/internal/config"
	"github.com/orderlyhq/orderly/cmd/internal/usage"
)

// version is orderly's version, stamped when the binary is built:
//
//	go build -ldflags "-X github.com/orderlyhq/orderly/cmd/internal/cli.version=v0.1.0" ./cmd/orderly
//
// make build and make release set it from git describe. Empty, Version
// falls back to the module's build info.
var version string

// Version returns the binary's version: the stamped one, else the module
// version go install recorded (v0.1.0), else "devel" and the commit when
// the build recorded one.
func Version() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return versionOf(info)
}

// versionOf is the version a build's info gives.
func versionOf(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	v := "devel"
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		v += " " + rev[:min(len(rev), 12)]
		if settings["vcs.modified"] == "true" {
			v += "-dirty"
		}
	}
	return v
}

var versionHelp = help{
	Usage: []string{"orderly version [--json]", "orderly --version"},
	Text: `Prints orderly's version, and the Go version and platform it was built
with.`,
}

// versionCmd prints the version.
func versionCmd(e *env, args []string) int {
	fs := e.newFlags("version", versionHelp)
	asJSON := fs.Bool("json", false, "print JSON")
	if code, stop := e.parse(fs, args); stop {
		return code
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	if *asJSON {
		b, _ := json.Marshal(map[string]string{"version": Version(), "go": runtime.Version(), "platform": platform})
		e.printJSON(b)
		return ExitOK
	}
	fmt.Fprintf(e.stdout, "orderly %s (%s, %s)\n", Version(), runtime.Version(), platform)
	return ExitOK
}

var helpHelp = help{
	Usage: []string{"orderly help [command]"},
	Text:  `Shows orderly's help, or a command's (the same as orderly <command> --help).`,
}

// helpCmd shows the help of orderly, or of the command named.
func helpCmd(e *env, args []string) int {
	fs := e.newFlags("help", helpHelp)
	rest, code, stop := e.parseArgs(fs, args)
	switch {
	case stop:
		return code
	case len(rest) == 0:
		WriteHelp(e.stdout)
		return ExitOK
	case len(rest) > 1:
		return e.usage(fs, "unexpected argument %q", rest[1])
	}
	if _, ok := lookup(rest[0]); !ok || rest[0] == "help" {
		if ok {
			e.writeHelp(fs)
			return ExitOK
		}
		return e.report("help", &usageError{msg: unknownCommand(rest[0], commandNames(), "orderly --help")}, ExitUsage)
	}
	return e.run([]string{rest[0], "--help"})
}

// summaries lists the commands with their summaries, aligned.
func summaries() string {
	var b strings.Builder
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-11s %s\n", c.name, c.summary)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// WriteHelp writes orderly's help, for orderly --help and orderly help:
// the commands, then how to run a node, and the node's flags.
func WriteHelp(w io.Writer) {
	text := "Commands:\n" + summaries() + `

"orderly <command> --help" shows a command's flags and examples.

Without a command, orderly runs a node.
` + config.NodeText
	var flags []usage.Flag
	for _, f := range config.Flags() {
		if f.Name == "help" {
			flags = append(flags, usage.Flag{Name: "version", Help: "print the version and exit"})
		}
		flags = append(flags, f)
	}
	usage.Write(w, usage.Help{
		Usage: []string{
			"orderly [flags]               run a node (flags below)",
			"orderly <command> [flags]     talk to a running node, or measure",
		},
		Text: text,
	}, flags)
}
