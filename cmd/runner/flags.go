package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// persistentKeys are the configuration keys every command uses: their
// flags are on every command. Every other key's flag is only on the
// commands that use it (keyCommands); its RUNNER_* variable and YAML key
// work everywhere.
var persistentKeys = map[string]bool{"data_dir": true, "store": true, "store_sync": true, "log.level": true, "log.format": true}

// keyCommands names the commands whose flags include key's: `serve` uses
// every key, `config` shows them all (so it takes every flag, to preview
// a configuration), `run` the sandbox and per-task limits (`call` the
// sandbox's, limits.compile_memory among them), `submit` what a
// queued task is checked against (the limits' maxima and mounts.allow),
// `cache` (and its subcommands) where the compilation cache is.
func keyCommands(key string) []string {
	cmds := []string{"serve", "config"}
	if batchKeys(key) {
		cmds = append(cmds, "batch")
	}
	switch {
	case key == "sandbox.cache_dir", key == "sandbox.user_cache", key == "sandbox.cache_max_bytes":
		cmds = append(cmds, "run", "call", "cache")
	case key == "max_compiled_modules", key == "max_compiled_module_bytes", key == "limits.compile_memory", strings.HasPrefix(key, "sandbox."):
		cmds = append(cmds, "run", "call")
	case key == "limits.snapshot":
	case key == "limits.max_input":
		cmds = append(cmds, "submit")
	case strings.HasPrefix(key, "limits.max_"):
		cmds = append(cmds, "run", "submit")
	case strings.HasPrefix(key, "limits."):
		cmds = append(cmds, "run")
	case key == "mounts.allow":
		cmds = append(cmds, "submit")
	}
	return cmds
}

// addKeyFlags registers the persistent keys' flags on root and every
// other key's flag on the commands keyCommands names.
func addKeyFlags(root *cobra.Command) {
	byName := map[string]*cobra.Command{}
	for _, c := range root.Commands() {
		byName[c.Name()] = c
	}
	for _, k := range configKeys {
		if persistentKeys[k.name] {
			root.PersistentFlags().String(flagName(k.name), k.def, k.usage)
			continue
		}
		for _, name := range keyCommands(k.name) {
			if c := byName[name]; c != nil && c.HasSubCommands() {
				c.PersistentFlags().String(flagName(k.name), k.def, k.usage)
			} else if c != nil {
				c.Flags().String(flagName(k.name), k.def, k.usage)
			}
		}
	}
}

// batchKeys are the keys runner batch uses: it runs its own pool over the
// embedded store, and stops in phases as serve does.
func batchKeys(key string) bool {
	switch {
	case strings.HasPrefix(key, "http."), key == "queues", key == "tenant_weights", key == "tenant_max_running", key == "retention", key == "mounts.allow":
		return false
	}
	return true
}
