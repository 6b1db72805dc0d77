package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func init() {
	register(&command{name: "version", summary: "print the qgtc version", run: func(args []string, w io.Writer) error {
		fs := newFlags("version", w)
		fs.Bool("quiet", false, "accepted as by every command (version prints no progress)")
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		rev := ""
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					rev = " " + s.Value
				}
			}
		}
		fmt.Fprintf(w, "qgtc %s%s (%s, %s/%s)\n", version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return nil
	}})
}
