package resume

import (
	"strings"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// GlobalExports lists the exports of a transformed module's own mutable
// globals (ExportGlobalPrefix), in order, and reports whether the module
// was transformed at all (it exports ExportPoint) and whether its calls
// of blocking imports are points (ExportHostPoints). A module it cannot
// read has none.
func GlobalExports(wasm []byte) (globals []string, resumable, hostPoints bool) {
	for _, name := range exportNames(wasm) {
		switch {
		case strings.HasPrefix(name, ExportGlobalPrefix):
			globals = append(globals, name)
		case name == ExportPoint:
			resumable = true
		case name == ExportHostPoints:
			hostPoints = true
		}
	}
	return globals, resumable, hostPoints
}

// ImportsHost reports whether wasm imports ImportModule itself: only the
// transform may, and the sandbox refuses a module that does.
func ImportsHost(wasm []byte) bool {
	secs, ok := wasmbin.Sections(wasm)
	if !ok {
		return false
	}
	for _, s := range secs {
		if s.ID != 2 {
			continue
		}
		r := reader{wasmbin.Reader{B: wasm[s.Start:s.End]}}
		n, _ := r.U32()
		for range n {
			mod, err := r.str()
			if err != nil {
				return false
			}
			if mod == ImportModule {
				return true
			}
			if r.name() != nil {
				return false
			}
			kind, _ := r.Byte()
			switch kind {
			case 0:
				_, err = r.U32()
			case 1:
				_, _ = r.Byte()
				err = skipLimits(&r)
			case 2:
				err = skipLimits(&r)
			case 3:
				_, err = r.Bytes(2)
			}
			if err != nil {
				return false
			}
		}
	}
	return false
}

func exportNames(wasm []byte) []string {
	secs, ok := wasmbin.Sections(wasm)
	if !ok {
		return nil
	}
	var names []string
	for _, s := range secs {
		if s.ID != 7 {
			continue
		}
		r := reader{wasmbin.Reader{B: wasm[s.Start:s.End]}}
		n, _ := r.U32()
		for range n {
			name, err := r.str()
			if err != nil {
				return names
			}
			if _, err := r.Byte(); err != nil {
				return names
			}
			if _, err := r.U32(); err != nil {
				return names
			}
			names = append(names, name)
		}
	}
	return names
}
