//go:build race

package testwasm

// SlowBrTableTargets makes [BrTableModule] take about 2 s to compile on a
// 2-core machine, in this build (the race detector slows wazero's compiler
// about 6 to 10 times).
const SlowBrTableTargets = 10000
