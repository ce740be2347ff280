// Package wasmbin decodes the WebAssembly binary format for the sandbox:
// it is the one place LEB128 numbers, a module's sections, its memory
// section and its data section are read (Reader: the cursor package
// resume's and package rewrite's decoders read a module with); and where
// the rewrites write a section, a name and a signed LEB128 number
// (AppendSection, AppendName, AppendSLEB), and a name section with its
// functions renumbered (RenumberNames).
//
// Its LEB128 readers follow wazero's (the leb128 package of wazero
// v1.12.0) byte for byte: a 32-bit number takes at most 5 bytes and the
// unused bits of the fifth must be zero (or, signed, repeat the sign), so
// anything wazero accepts is cut into the same numbers here. An overlong
// encoding that fits in those bytes (0x80 0x00 for 0) is accepted, as
// wazero accepts it.
//
// Nothing here allocates for a malformed module or reads past its input:
// a reader returns ErrEOF or ErrBadLEB, a decoder false.
package wasmbin
