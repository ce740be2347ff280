//go:build !linux

package batch

import "errors"

// writeGroupLinked needs O_TMPFILE and linkat through /proc (Linux):
// elsewhere outputs are written to named temporary files.
func (o *outDir) writeGroupLinked(files []outputFile) []error {
	errs := make([]error, len(files))
	for i := range errs {
		errs[i] = errNoLink
	}
	return errs
}

// syncfsHonoured: syncfs(2) is Linux's; elsewhere each file is fsynced.
func syncfsHonoured(string) (bool, string) { return false, "not Linux" }

// syncfsCall: never used where syncfsHonoured says no.
func syncfsCall(int) error { return errors.ErrUnsupported }
