// Package extismkernel is the host side of the Extism kernel for one
// plugin instance: the kernel memory the guest addresses by offsets
// (alloc, free, length, load, store of extism:host/env), the call's input,
// output and error, and the instance's vars, every offset checked and
// every byte charged to the instance's memory budget. Package sandbox
// wires it into the extism:host/env host module; only it uses this one.
package extismkernel
