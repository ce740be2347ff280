// Package extismbridge lets package sandbox/extism reach the Extism kernel
// of a host function's call without package sandbox exporting it: sandbox
// sets Kernel in an init (extism_bridge.go), sandbox/extism calls it.
package extismbridge

import "github.com/stint-run/stint/sandbox/internal/extismkernel"

// Kernel returns the kernel memory of call (a sandbox.Call, typed any to
// avoid an import cycle), or nil when the guest is not an Extism plugin
// being called. Package sandbox sets it before any call can happen.
var Kernel func(call any) *extismkernel.Kernel
