package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

func (a *app) configInitCommand() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "init [PATH]",
		Short: "Write a commented YAML configuration file with every key at its default",
		Long: `Write a YAML configuration file with every key, its default and what it
means (with its RUNNER_* variable and flag), to PATH, or to stdout without
PATH or with -. It is written from the same table the runner reads its
keys from, so it names every key and default of this version: change what
you need, delete the rest, and give it with --config or RUNNER_CONFIG.

An existing PATH is left alone (exit 2) unless --force is given. The file is
created readable by its owner only (0600): it may come to hold http.token.`,
		Example: `  runner config init runner.yaml
  runner config init > runner.yaml
  runner serve --config runner.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			text := configTemplate()
			if len(args) == 0 || args[0] == "-" {
				_, err := fmt.Fprint(a.stdout, text)
				return err
			}
			path := args[0]
			flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
			if force {
				flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			}
			f, err := os.OpenFile(path, flags, 0o600)
			if errors.Is(err, fs.ErrExist) {
				return usageErrorf("%s already exists: it is left as it is (--force overwrites it)", path)
			}
			if err != nil {
				return usageErrorf("config init: %v", err)
			}
			_, err = f.WriteString(text)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("writing %s: %w", path, err)
			}
			fmt.Fprintf(a.stderr, "wrote %s: every key at its default; runner config --config %s shows them\n", path, path)
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "overwrite PATH if it exists")
	return cmd
}

// configTemplate is the YAML file `runner config init` writes: every key of
// configKeys, in its order, nested by section (sandbox.compile_timeout is
// compile_timeout under sandbox:), each at its default and under a comment
// with its meaning, variable and flag. Loaded back, it yields exactly the
// defaults (TestConfigInitLoadsBackTheDefaults).
func configTemplate() string {
	var b strings.Builder
	b.WriteString(`# Stint runner configuration, written by runner config init: every key at
# its default. Flags win over RUNNER_* variables, variables over this file,
# this file over the defaults. Give it with --config FILE or RUNNER_CONFIG;
# runner config --config FILE prints each effective value and its source.
# The keys are documented in docs/configuration.md.
`)
	type entry struct {
		leaf string
		key  configKey
	}
	var sections []string
	bySection := map[string][]entry{}
	for _, k := range configKeys {
		section, leaf, nested := strings.Cut(k.name, ".")
		if !nested {
			section, leaf = "", k.name
		}
		if _, ok := bySection[section]; !ok {
			sections = append(sections, section)
		}
		bySection[section] = append(bySection[section], entry{leaf, k})
	}
	// Top-level keys first, then each section in the table's order.
	if i := slices.Index(sections, ""); i > 0 {
		sections = append([]string{""}, append(sections[:i:i], sections[i+1:]...)...)
	}
	for _, section := range sections {
		indent := ""
		if section != "" {
			fmt.Fprintf(&b, "\n%s:\n", section)
			indent = "  "
		}
		for _, e := range bySection[section] {
			b.WriteString("\n")
			for _, line := range wrap(e.key.usage, 76-len(indent)) {
				fmt.Fprintf(&b, "%s# %s\n", indent, line)
			}
			fmt.Fprintf(&b, "%s# (%s, --%s)\n", indent, envName(e.key.name), flagName(e.key.name))
			fmt.Fprintf(&b, "%s%s: %s\n", indent, e.leaf, yamlValue(e.key))
		}
	}
	return b.String()
}

// yamlValue is a key's default as YAML: a list key's empty default is an
// empty list, every other value a quoted string (the runner parses the
// string, so "0" stays a duration and "64MiB" a size).
func yamlValue(k configKey) string {
	if k.kind == kindList {
		if k.def == "" {
			return "[]"
		}
		parts := splitList(k.def)
		for i, p := range parts {
			parts[i] = strconv.Quote(p)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return strconv.Quote(k.def)
}

// wrap splits s into lines of at most width bytes, at spaces.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
