package main

import "github.com/stint-run/stint/internal/termsafe"

// termSafe is s as the runner shows it on a terminal: every control
// character but the tab, the marks that reorder text and the bytes that
// are not UTF-8 escaped (termsafe.String).
func termSafe(s string) string { return termsafe.String(s) }
