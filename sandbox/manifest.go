package sandbox

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
)

// Bounds of a manifest's requests, past which LoadPlugin refuses it.
const (
	MaxPluginBytes     = 256 << 20 // caps Manifest.Limits.MaxInput and MaxOutput (256 MiB)
	MaxPluginInstances = 64        // caps Manifest.Instances
)

// Defaults of a plugin's limits (PluginLimits).
const (
	DefaultPluginTimeout  = 10 * time.Second // a call's timeout
	DefaultPluginMaxBytes = 1 << 20          // the cap of a call's input and output
)

// ErrManifest is wrapped by LoadPlugin's error for a manifest it refuses.
var ErrManifest = errors.New("manifest refused")

// Manifest is what a plugin may do, deny by default: only the host
// modules, mounts, environment and config values it lists, under its
// limits; LoadPlugin refuses one that asks for what the runtime lacks or
// for more than its maxima (docs/plugins.md, "The manifest").
type Manifest struct {
	Name        string            // the plugin's name, for host functions (Call.Plugin) and logs
	SHA256      string            // when set, the hex sha256 the module's bytes must have
	HostModules []string          // the import modules it may use (the embedder's, WASI, stint, stint_plugin, ExtismModule); none by default
	Mounts      []Mount           // the only directories it sees (needs WASI)
	Env         map[string]string // its whole environment (needs WASI)
	Config      map[string]string // the values it may read (config_get, Call.Config)
	Limits      PluginLimits      // bounds of each call and instance
	Fresh       bool              // a new instance for every call (default: warm, dropped after a call that did not succeed)
	Instances   int               // instances running calls at once (default 1: calls serialized)
	HTTP        HTTPGrant         // what an Extism plugin may reach with http_request (none by default)
	MaxVarBytes int64             // an Extism plugin's vars, per instance (default and maximum MaxExtismVarBytes)
}

// PluginLimits bound a plugin's calls; a zero field takes its default
// (docs/plugins.md, "The manifest").
type PluginLimits struct {
	MemoryBytes          int64         // an instance's memory across its calls (default: Config.Defaults)
	Timeout              time.Duration // a call's wall-clock budget, instantiation included (DefaultPluginTimeout; negative: none)
	Grace                time.Duration // how long before Timeout stop_requested returns 1 (a tenth of Timeout, at most 5s)
	MaxInput, MaxOutput  int64         // a call's input and output bytes (DefaultPluginMaxBytes; at most MaxPluginBytes)
	MaxStdout, MaxStderr int64         // what one call writes to stdout and stderr (default: Config.Defaults)
	Work                 int64         // a call's work budget, as Limits.Work (default: Config.Defaults.Work; negative: none; checks mode only)
}

// withDefaults fills the zero fields of l.
func (l PluginLimits) withDefaults(d Limits) PluginLimits {
	l.MemoryBytes = cmp.Or(l.MemoryBytes, d.MemoryBytes)
	l.Timeout = cmp.Or(l.Timeout, DefaultPluginTimeout)
	l.MaxInput = cmp.Or(l.MaxInput, DefaultPluginMaxBytes)
	l.MaxOutput = cmp.Or(l.MaxOutput, DefaultPluginMaxBytes)
	l.MaxStdout = cmp.Or(l.MaxStdout, d.MaxStdout)
	l.MaxStderr = cmp.Or(l.MaxStderr, d.MaxStderr)
	l.Work = cmp.Or(l.Work, d.Work)
	return l
}

// runLimits are the Limits a call runs under (for classify).
func (l PluginLimits) runLimits() Limits {
	return Limits{MemoryBytes: l.MemoryBytes, Timeout: l.Timeout, Grace: l.Grace,
		MaxStdout: l.MaxStdout, MaxStderr: l.MaxStderr, MaxCheckpoint: 1 << 20, Work: max(l.Work, 0)}
}

// withDefaults returns m with its defaults filled from the runtime's.
func (m Manifest) withDefaults(cfg *Config) Manifest {
	m.Limits = m.Limits.withDefaults(cfg.Defaults)
	if m.Instances == 0 {
		m.Instances = 1
	}
	return m
}

// validate reports what the runtime refuses in m (defaults filled).
func (m *Manifest) validate(r *Runtime) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	seen := map[string]bool{}
	for _, h := range m.HostModules {
		switch {
		case seen[h]:
			bad("host module %q is listed twice", h)
		case h == interruptModule:
			bad("host module %q is Stint's own, always there: do not list it", h)
		case isReservedModule(h):
		case r.hosts[h] == nil:
			bad("host module %q: no such host module (the runtime has %s)", h, r.hostModuleNames())
		}
		seen[h] = true
	}
	wasi := seen[wasiModule]
	if (len(m.Mounts) > 0 || len(m.Env) > 0) && !wasi {
		bad("mounts and env need WASI: grant host module %q", wasiModule)
	}
	spec := Spec{Mounts: m.Mounts, Env: m.Env}
	if err := spec.Validate(); err != nil {
		errs = append(errs, err)
	}
	for k := range m.Config {
		if k == "" {
			bad("config: a key must not be empty")
		}
	}
	if m.SHA256 != "" && (len(m.SHA256) != 64 || strings.Trim(strings.ToLower(m.SHA256), "0123456789abcdef") != "") {
		bad("sha256 %q is not 64 hex digits", m.SHA256)
	}
	l := &m.Limits
	if l.MemoryBytes < 0 || l.MemoryBytes > r.cfg.MaxMemoryBytes {
		bad("memory limit of %d bytes (%s) is negative or over the runtime's maximum of %s",
			l.MemoryBytes, pagesString(pagesFor(l.MemoryBytes)), pagesString(uint32(r.cfg.MaxMemoryBytes/PageSize)))
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"max input", l.MaxInput}, {"max output", l.MaxOutput}} {
		if f.v < 0 || f.v > MaxPluginBytes {
			bad("%s of %d bytes: must be between 1 and %d", f.name, f.v, MaxPluginBytes)
		}
	}
	if l.MaxStdout < 0 || l.MaxStderr < 0 || l.Grace < 0 {
		bad("max stdout, max stderr and grace must not be negative")
	}
	if l.Work > 0 && !r.cfg.Interrupt.loopChecks() {
		errs = append(errs, ErrWorkNeedsChecks)
	}
	if m.Instances < 1 || m.Instances > MaxPluginInstances {
		bad("instances %d: must be between 1 and %d", m.Instances, MaxPluginInstances)
	}
	errs = append(errs, m.validateExtism()...) // extism_http.go
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrManifest, err)
	}
	return nil
}

// checkGrants refuses a module that imports from a module m does not grant.
func (m *Manifest) checkGrants(cm wazero.CompiledModule) error {
	granted := func(mod string) bool {
		if mod == interruptModule {
			return true // added by the rewrite
		}
		for _, h := range m.HostModules {
			if h == mod {
				return true
			}
		}
		return false
	}
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		if !granted(mod) {
			return &ModuleError{Kind: KindBadImport, Message: fmt.Sprintf(
				"module imports %s.%s, but its manifest does not grant host module %q", mod, name, mod)}
		}
	}
	return nil
}

const wasiModule = "wasi_snapshot_preview1"

func (r *Runtime) hostModuleNames() string {
	names := []string{HostModule, PluginModule, wasiModule, ExtismModule}
	for _, h := range r.cfg.HostModules {
		names = append(names, h.Name)
	}
	return strings.Join(names, ", ")
}
