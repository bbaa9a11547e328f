package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/cmd/internal/config"
	"github.com/orderlyhq/orderly/cmd/internal/usage"
)

// commit is the commit the binary was built from, when the build stamps it
// (make build does, from git, so that -buildvcs=false loses nothing):
//
//	go build -ldflags "-X github.com/orderlyhq/orderly/cmd/internal/cli.commit=d2e7d2e" ./cmd/orderly
//
// Empty, the commit go build recorded (vcs.revision) stands in. The
// version is orderly.Version, stamped there.
var commit string

// buildMeta is what a build recorded beside orderly.Version, for orderly
// version: the commit, and the module version when go install recorded one
// that is not v<Version> (a pseudo-version, which names its commit). Empty
// fields were not recorded.
type buildMeta struct {
	Commit string
	Module string
}

// buildMetaOf reads a build's metadata: the commit stamped (when not
// empty), else the first 7 hex digits of the vcs.revision of info, with
// "-dirty" when the tree had changes; and the module version of info.
func buildMetaOf(info *debug.BuildInfo, stamped string) buildMeta {
	m := buildMeta{Commit: stamped}
	if v := info.Main.Version; v != "" && v != "(devel)" && v != "v"+orderly.Version {
		m.Module = v
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" && m.Commit == "" {
		m.Commit = rev[:min(len(rev), 7)]
		if settings["vcs.modified"] == "true" {
			m.Commit += "-dirty"
		}
	}
	return m
}

// versionLine is orderly version's line: the version, then the build's
// metadata, Go version and platform in parentheses.
func versionLine(m buildMeta, goVersion, platform string) string {
	var extra []string
	if m.Commit != "" {
		extra = append(extra, "commit "+m.Commit)
	}
	if m.Module != "" {
		extra = append(extra, "module "+m.Module)
	}
	extra = append(extra, goVersion, platform)
	return fmt.Sprintf("orderly %s (%s)\n", orderly.Version, strings.Join(extra, ", "))
}

var versionHelp = help{
	Usage: []string{"orderly version [--json]", "orderly --version"},
	Text: `Prints orderly's version, the one its nodes advertise to the cluster
(orderly members) and label orderly_build_info with; then the commit it was
built from, and the Go version and platform it was built with.`,
}

// versionCmd prints the version.
func versionCmd(e *env, args []string) int {
	fs := e.newFlags("version", versionHelp)
	asJSON := fs.Bool("json", false, "print JSON")
	if code, stop := e.parse(fs, args); stop {
		return code
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = &debug.BuildInfo{}
	}
	meta := buildMetaOf(info, commit)
	platform := runtime.GOOS + "/" + runtime.GOARCH
	if *asJSON {
		b, _ := json.Marshal(struct {
			Version  string `json:"version"`
			Commit   string `json:"commit,omitempty"`
			Module   string `json:"module,omitempty"`
			Go       string `json:"go"`
			Platform string `json:"platform"`
		}{orderly.Version, meta.Commit, meta.Module, runtime.Version(), platform})
		e.printJSON(b)
		return ExitOK
	}
	io.WriteString(e.stdout, versionLine(meta, runtime.Version(), platform))
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
