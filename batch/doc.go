// Package batch runs one WebAssembly module once per input file (a
// folder's tree, a file, a glob, or a list of paths) and writes each
// result to an output folder, resumably: it is `runner batch` as a
// library.
//
//	sum, err := batch.Run(ctx, batch.Config{
//		Module: wasm, In: "texts", Out: "upper",
//		Runner: stint.Config{Store: "sqlite:stint-data/stint.db"},
//	})
//
// Each input file is a task on the guest's stdin; its stdout becomes
// Out/NAME (NAME its path below In, or Config.OutputName with GNU
// parallel's replacement strings), written whole or not at all (a
// temporary file made durable, then named), and a failed input gets
// Out/.stint-batch/stderr/NAME instead (StderrDir). The
// tasks live in the store of Config.Runner, one queue per output folder
// (Queue), keyed by the output folder, the module, the input's path and
// sha256, the arguments and the environment: run the same Config again
// after a stop or a crash and the inputs that succeeded are skipped,
// interrupted ones resume from their checkpoints, changed files run
// again, and failed ones are tried again unless Config.SkipFailed.
// Config.Halt stops a batch once inputs fail; Plan is a dry run. Links
// in In are never followed, and an output's mode is never wider than its
// input's. See docs/batch.md.
package batch
