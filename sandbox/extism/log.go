package extism

import (
	"fmt"
	"math"
	"strings"

	"github.com/stint-run/stint/sandbox"
)

// LogLevel is a log message's level, as in Extism's go-sdk (the same
// constants, the same values).
type LogLevel int32

// The levels, with the go-sdk's names and values.
const (
	// LogLevelTrace is the most verbose level (1: the go-sdk's zero
	// value is no level).
	LogLevelTrace LogLevel = iota + 1
	// LogLevelDebug is for debugging.
	LogLevelDebug
	// LogLevelInfo is for information: the lowest level written (a call's
	// log level is always info, sandbox.ExtismLogLevel).
	LogLevelInfo
	// LogLevelWarn is for warnings.
	LogLevelWarn
	// LogLevelError is for errors.
	LogLevelError
	// LogLevelOff is no level: a message at it is not written.
	LogLevelOff LogLevel = math.MaxInt32
)

// String is the level's name in capitals ("INFO"), "OFF" for any other
// value, as in the go-sdk.
func (l LogLevel) String() string {
	switch l {
	case LogLevelTrace:
		return "TRACE"
	case LogLevelDebug:
		return "DEBUG"
	case LogLevelInfo:
		return "INFO"
	case LogLevelWarn:
		return "WARN"
	case LogLevelError:
		return "ERROR"
	}
	return "OFF"
}

// ExtismCompat is the level's number in Extism's PDKs and kernel (trace 0
// to error 4; get_log_level answers 2, info), LogLevelOff's for any other
// value, as in the go-sdk.
func (l LogLevel) ExtismCompat() int32 {
	switch l {
	case LogLevelTrace, LogLevelDebug, LogLevelInfo, LogLevelWarn, LogLevelError:
		return int32(l - LogLevelTrace)
	}
	return int32(LogLevelOff)
}

// Log writes message to the call's stderr (sandbox.Outcome.Stderr) as
// the plugin's own log functions do, one line "[info] message", when its
// level is info, warn or error; trace, debug and any other level are
// dropped (the call's level is info, sandbox.ExtismLogLevel). The go-sdk
// sends it to a process-wide logger instead. Past the call's stderr cap
// (sandbox.Limits.MaxStderr) the call ends as output_limit, and Log does
// not return. Outside a call it does nothing.
func (p *CurrentPlugin) Log(level LogLevel, message string) {
	if !level.written() {
		return
	}
	name := strings.ToLower(level.String())
	line := make([]byte, 0, len(name)+len(message)+4)
	line = append(append(append(append(line, '['), name...), "] "...), message...)
	p.call.WriteStderr(append(line, '\n'))
}

// Logf is Log of fmt.Sprintf(format, args...), formatted only if the
// level is written.
func (p *CurrentPlugin) Logf(level LogLevel, format string, args ...any) {
	if !level.written() {
		return
	}
	p.Log(level, fmt.Sprintf(format, args...))
}

// written reports whether a message at l is written: info, warn and error
// (sandbox.ExtismLogLevel and above).
func (l LogLevel) written() bool {
	return l >= LogLevelTrace && l <= LogLevelError && l.ExtismCompat() >= sandbox.ExtismLogLevel
}
