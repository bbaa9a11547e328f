package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/orderlyhq/orderly/cmd/internal/usage"
)

// envConfig names the config file.
const envConfig = "ORDERLY_CONFIG"

// maxFileBytes bounds the config file, in case --config names a device or a
// log file by mistake.
const maxFileBytes = 4 << 20

// Load builds the node's configuration from its flags (args, without the
// program name and subcommand), its environment (environ, as os.Environ
// returns it) and the YAML file named by --config or ORDERLY_CONFIG. A flag
// overrides the environment, which overrides the file, which overrides the
// defaults; queues come only from the file, and with none the node gets the
// queue DefaultQueueName with the log handler.
//
// For -h or --help Load writes the usage text to usageOut (nil: discard)
// and returns flag.ErrHelp. Any other error wraps ErrInvalid and lists every
// problem found, each naming its file key, environment variable or flag.
func Load(args, environ []string, usageOut io.Writer) (*Config, error) {
	l := loader{readFile: readFile, hostname: os.Hostname}
	return l.load(args, environ, usageOut)
}

// loader holds Load's access to the system, which tests replace.
type loader struct {
	readFile func(name string) ([]byte, error)
	hostname func() (string, error)
}

func (l loader) load(args, environ []string, usageOut io.Writer) (*Config, error) {
	if usageOut == nil {
		usageOut = io.Discard
	}
	var p problems
	flags, err := parseFlags(args, &p)
	if errors.Is(err, flag.ErrHelp) {
		writeUsage(usageOut)
		return nil, flag.ErrHelp
	}
	env, warnings := readEnv(environ)
	cfg := &Config{Node: defaultNode(), Warnings: warnings}

	cfg.File = env[envConfig]
	if flags.configSet {
		cfg.File = flags.config
	}
	if cfg.File != "" {
		if data, err := l.readFile(cfg.File); err != nil {
			p = append(p, fmt.Errorf("config file %s: %w", cfg.File, err))
		} else {
			parseFile(cfg.File, data, cfg, &p)
		}
	}
	for _, s := range settings() { // the file is applied; the environment overrides it
		name := envName(s.key())
		if v, ok := env[name]; ok {
			if err := s.setText(&cfg.Node, v); err != nil {
				p.addf("%s: %v", name, err)
			}
		}
	}
	for _, f := range flags.set { // flags override everything
		if err := f.setting.setText(&cfg.Node, f.raw); err != nil {
			p.addf("flag --%s: %v", flagName(f.setting.key()), err)
		}
	}
	if len(p) > 0 {
		return nil, p.err()
	}

	if cfg.Node.Name == "" { // no source set it (an explicit "" is an error)
		host, err := l.hostname()
		if err == nil && host == "" {
			err = errors.New("empty")
		}
		if err != nil {
			p.addf("node.name: not set, and the host name is unknown (%v): set node.name, %s or --name", err, envName("name"))
			return nil, p.err()
		}
		cfg.Node.Name = host
	}
	if len(cfg.Queues) == 0 {
		cfg.Queues = []QueueConfig{defaultQueue(DefaultQueueName)}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// readEnv returns the values of the known ORDERLY_* variables that are set
// and not empty, and a warning for each unknown one. As with os.Getenv, the
// first of repeated entries counts.
func readEnv(environ []string) (map[string]string, []string) {
	known := []string{envConfig}
	for _, s := range settings() {
		known = append(known, envName(s.key()))
	}
	vals := make(map[string]string)
	var warnings []string
	seen := make(map[string]bool)
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, "ORDERLY_") || seen[name] {
			continue
		}
		seen[name] = true
		switch {
		case slices.Contains(known, name):
			if val != "" {
				vals[name] = val
			}
		case name == "ORDERLY_REQUIRE_REDIS", name == "ORDERLY_REDIS_SERVER", name == "ORDERLY_MODEL_SEED":
			// the test tooling's: no warning
		default:
			w := "unknown environment variable " + name + " is ignored"
			if s := usage.Suggest(name, known); s != "" {
				w += "; did you mean " + s + "?"
			}
			warnings = append(warnings, w)
		}
	}
	slices.Sort(warnings)
	return vals, warnings
}

// readFile reads the config file, refusing one over maxFileBytes.
func readFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, withoutPath(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, withoutPath(err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("larger than %d MiB", maxFileBytes>>20)
	}
	return data, nil
}

// withoutPath drops the path from a *fs.PathError: the caller names the file.
func withoutPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
