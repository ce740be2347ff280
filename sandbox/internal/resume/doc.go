// Package resume makes a module resumable: its guest can be asked to
// suspend, leaves its call stack in a list of numbers the host keeps, and
// later, in a fresh instance (on any runner or architecture) given its
// memory, globals and that list, re-enters every frame where it left it
// and runs on as if nothing had happened. It is Binaryen's Asyncify
// technique, done on the module's own bytes before the rewrite
// (sandbox/internal/rewrite) adds the stop checks, so that the rewrite
// charges and tests the added code like any other and the verifier
// (sandbox/internal/verify) proves the bound on the result unchanged.
//
// Transform adds two imports (ImportModule's PushFunc and PopFunc: every
// function defined by the module moves up by two), four mutable i32
// globals, three exported (ExportRewinding, ExportUnwinding, ExportPoint), and
// an export for each mutable global the module defines (ExportGlobalPrefix
// and its index), which a snapshot reads and restores.
//
// The protocol with the host:
//
//   - To suspend, the host sets ExportPoint to 1 (the sandbox does it from
//     its interrupt function, which the stop checks call every few
//     thousand units of work). At the next point (a loop's header, the
//     entry of an instrumented function) the guest unwinds: each frame on
//     the stack pushes its locals (every one, as i64, first to last) and
//     its function's index, from the innermost out, and returns stand-in
//     results; ExportUnwinding is then 1 and the export called returns.
//     The pushed list, memory and the exported globals are the snapshot.
//   - To resume, the host instantiates the module afresh, restores memory
//     and globals, makes the list the one pop reads from (last pushed
//     first), sets ExportRewinding and ExportPoint to 1 and calls the same
//     export. Each function's prologue pops its frame (a function index
//     that is not its own traps), skips the code before the site it left
//     from, and calls on into the next frame, until the innermost arrives
//     at its point and sets both back to 0. The list is then empty.
//
// What each instrumented function becomes: its body in `block $unwind`,
// after a prologue (`global.get point; if ...`) that rewinds or unwinds
// at the entry; the body in a block that yields its results; then the
// epilogue that pushes the frame (through small helper functions, so that
// the function itself grows little). Inside, where a call can unwind (a
// call of an instrumented function, every call_indirect) or a loop holds
// a point, the code before it since the last such site (a run) is guarded
// by `global.get rewinding; if`, which skips it while rewinding and makes
// up stand-in values of the types it would leave (types.go). A direct
// call stays where it was: while rewinding, unless it is the site to
// resume at, its guard sets a fourth global (skip, the guest's own) and
// the callee's prologue returns at once; a call_indirect is made in its
// guard, from the table slot it saved, only at the site to resume at. The
// values under a call's operands are kept in added locals across it, so
// that the check after it (`global.get unwinding; if`) passes no values.
// A loop is entered while rewinding only if the site lies within it (sites
// are numbered in order, so each construct holds a range); a block always,
// an if's then arm if the site lies within it, else its else arm, and the
// code after their last site is guarded too. A local written while
// rewinding (a temp) is never one that holds a site's saved values. In
// normal running the cost is a global read and a branch at each loop
// header and entry, before each such call and after it.
//
// Which functions are instrumented (callgraph.go): those with a loop, a
// call_indirect or a call of a blocking import, those on a cycle of the call graph (a recursion's entry
// is its point), and their callers. The rest finish in bounded time
// without reaching a point and are only renumbered.
//
// Not supported yet, refused with an *Error: a start function (it would
// run again on resume), SIMD, reference-typed locals or values held
// across a call, and changes to tables or dropped segments at run time
// (a snapshot does not hold tables), and a blocking import in a table or
// taken by ref.func (a call of it through a table could not be made
// again).
//
// Blocking host calls (Transform's blocking imports; the sandbox gives
// poll_oneoff, whose sleeps can last an hour, and fd_read, whose reads of
// a pipe can wait for ever) are points too: a host
// function asked to suspend while it blocks sets unwinding, clears point
// and returns, and the guest leaves from right after the call, with that
// call as its site (hostSite). Its arguments are kept in locals of the
// frame before it is made; rewinding to it, the guest arrives (rewinding
// and point back to 0) and makes the call again with them, and the host
// gives it what was left of it. Passing it while rewinding, the call is
// not made.
//
// Files: module.go (sections, the added imports, globals and exports),
// callgraph.go (which functions), body.go (the transform of a body),
// exports.go (what the sandbox reads of a transformed module),
// types.go (the operand stack's types), reader.go (the decoder).
package resume
