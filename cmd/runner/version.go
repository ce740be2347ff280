package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

// wazeroModule is the module path of the WebAssembly runtime.
const wazeroModule = "github.com/tetratelabs/wazero"

// versionInfo is what `runner version` prints, from the binary's build
// information (runtime/debug.ReadBuildInfo).
type versionInfo struct {
	// Version is -X main.version, else the main module's version, else "dev".
	Version string `json:"version"`
	// Revision is the VCS commit the binary was built from (empty when
	// the build did not record it), Modified whether the tree had changes.
	Revision string `json:"revision,omitempty"`
	Time     string `json:"revision_time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	// Go is the Go version that built the binary.
	Go string `json:"go"`
	// Wazero is the version of github.com/tetratelabs/wazero linked in.
	Wazero string `json:"wazero"`
}

func readVersionInfo() versionInfo {
	vi := versionInfo{Version: version, Go: runtime.Version(), Wazero: "unknown"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if vi.Version == "" {
			vi.Version = "dev"
		}
		return vi
	}
	if vi.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		vi.Version = bi.Main.Version
	}
	if vi.Version == "" {
		vi.Version = "dev"
	}
	if bi.GoVersion != "" {
		vi.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			vi.Revision = s.Value
		case "vcs.time":
			vi.Time = s.Value
		case "vcs.modified":
			vi.Modified = s.Value == "true"
		}
	}
	for _, d := range bi.Deps {
		if d.Path == wazeroModule {
			vi.Wazero = d.Version
			if d.Replace != nil {
				vi.Wazero = d.Replace.Version + " (replaces " + d.Version + ")"
			}
		}
	}
	return vi
}

func (a *app) versionCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the runner's version, commit, and its Go and wazero versions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			vi := readVersionInfo()
			if asJSON {
				return a.printJSON(vi)
			}
			fmt.Fprintf(a.stdout, "runner %s\n", vi.Version)
			if vi.Revision != "" {
				rev := vi.Revision
				if vi.Modified {
					rev += " (modified)"
				}
				if vi.Time != "" {
					rev += " " + vi.Time
				}
				fmt.Fprintf(a.stdout, "commit  %s\n", rev)
			}
			fmt.Fprintf(a.stdout, "go      %s\nwazero  %s\n", vi.Go, vi.Wazero)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object: version, revision, revision_time, modified, go, wazero")
	return cmd
}
