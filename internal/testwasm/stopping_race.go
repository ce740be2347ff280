//go:build race

package testwasm

// SlowBrTableTargets makes [BrTableModule] take about 2 s to compile on a
// 2-core machine, in this build (the race detector slows wazero's compiler
// about 6 to 10 times).
const SlowBrTableTargets = 10000

// Race reports whether this build has the race detector, which slows the
// sandbox's Go code (the rewrite, the verifier) about ten times: tests that
// prepare the largest real programs leave them to the build without it.
const Race = true
