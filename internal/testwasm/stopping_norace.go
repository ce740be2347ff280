//go:build !race

package testwasm

// SlowBrTableTargets makes [BrTableModule] take about 1.5 s to compile on
// a 2-core machine, in this build (see stopping_race.go for -race).
const SlowBrTableTargets = 40000
