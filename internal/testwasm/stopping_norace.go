//go:build !race

package testwasm

// SlowBrTableTargets makes [BrTableModule] take seconds to compile on a
// 2-core machine, in this build (see stopping_race.go for -race): far more
// than the 500 ms attempt timeout of pool's TestPoolCompileNotChargedToAttempt
// even on a quiet machine (40,000 targets compiled in under 1 s, once in
// under 500 ms, and failed that test).
const SlowBrTableTargets = 80000

// Race reports whether this build has the race detector (stopping_race.go).
const Race = false
