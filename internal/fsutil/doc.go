// Package fsutil holds the runner's file-system helpers that more than one
// package needs: the durable atomic write (WriteFile, WriteFileIn) and the
// private modes of the data directory (PrivateDirMode, PrivateFileMode,
// MkdirPrivate, CreatePrivate, WideFiles).
//
// A durable atomic write writes a temporary file in the destination's
// directory, fsyncs it, renames it over the destination and fsyncs the
// directory: a reader sees the old file or the new one, never part of
// either, and after a crash the file is the old one or the new one, the
// rename having reached the disk once WriteFile returns.
package fsutil
