// Package memory gives guests their linear memory: the per-instance
// allocator that holds a task to its memory limit (Budget), the pool of
// zeroed buffers it draws from (Pool), and copy-on-write memory images of
// a module's initial memory (Image), built from its data segments and
// reset for the next task. Only package sandbox uses it.
package memory
