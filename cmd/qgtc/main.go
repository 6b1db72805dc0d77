package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// command is one subcommand. run gets the arguments after the subcommand's
// name and writes its normal output to stdout.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout io.Writer) error
}

var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("qgtc: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// errUsage marks an error whose message is a usage complaint (exit code 2).
var errUsage = errors.New("usage")

func usage(w io.Writer) {
	fmt.Fprintln(w, "qgtc: quantized graph neural networks on bit tensors (CPU and GPU tensor cores)")
	fmt.Fprintln(w, "\nUsage: qgtc <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'qgtc <command> --help' for a command's flags.")
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "qgtc: unknown command %q (see 'qgtc --help')\n", args[0])
		return 2
	}
	stop, err := startProfiles()
	if err == nil {
		err = c.run(args[1:], stdout)
		stop()
	}
	if err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "qgtc %s: %s\n", c.name, strings.TrimSpace(err.Error()))
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	return 0
}

// startProfiles starts Go's CPU profile into $QGTC_CPUPROFILE and its
// execution trace (scheduling, GC) into $QGTC_TRACE where they are set;
// stop ends both. Where a host-side stage is slow, these say why.
func startProfiles() (stop func(), err error) {
	var done []func()
	stop = func() {
		for _, f := range done {
			f()
		}
	}
	start := func(env string, begin func(io.Writer) error, end func()) error {
		path := os.Getenv(env)
		if path == "" {
			return nil
		}
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("%s: %w", env, err)
		}
		if err := begin(f); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", env, err)
		}
		done = append(done, func() { end(); f.Close() })
		return nil
	}
	if err = start("QGTC_CPUPROFILE", pprof.StartCPUProfile, pprof.StopCPUProfile); err == nil {
		err = start("QGTC_TRACE", trace.Start, trace.Stop)
	}
	if err != nil {
		stop()
		return func() {}, err
	}
	return stop, nil
}

// newFlags returns a flag set for a subcommand that reports errors instead of exiting.
func newFlags(name string, stdout io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("qgtc "+name, pflag.ContinueOnError)
	fs.SetOutput(stdout)
	return fs
}

// parseFlags parses args, turning flag errors into usage errors. The
// command takes no positional arguments: the first one is named in a
// usage error, so a misspelt flag value or a stray word is never ignored.
func parseFlags(fs *pflag.FlagSet, args []string) error {
	if err := parseFlagsArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		// A flag whose value is optional takes it only after '=': "--lcc
		// false" is --lcc=true and an argument "false".
		hint := ""
		fs.Visit(func(f *pflag.Flag) {
			if f.NoOptDefVal != "" && f.Value.Type() != "bool" && hint == "" {
				hint = fmt.Sprintf(": --%s takes its value after '=' (--%s=%s)", f.Name, f.Name, fs.Arg(0))
			}
		})
		if hint != "" {
			return fmt.Errorf("%w: unexpected argument %q%s", errUsage, fs.Arg(0), hint)
		}
		return fmt.Errorf("%w: unexpected argument %q (see '%s --help')", errUsage, fs.Arg(0), fs.Name())
	}
	return nil
}

// parseFlagsArgs is parseFlags for a command that takes positional
// arguments (such as `data info NAME`); the caller checks fs.Args().
func parseFlagsArgs(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}

// printJSON writes v to w as one indented JSON object (--json).
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// flagOutside is the first flag given (in fs.Visit's order) that is not
// in allowed, or "" when every one is.
func flagOutside(fs *pflag.FlagSet, allowed map[string]bool) string {
	var bad string
	fs.Visit(func(f *pflag.Flag) {
		if !allowed[f.Name] && bad == "" {
			bad = f.Name
		}
	})
	return bad
}
