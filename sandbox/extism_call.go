package sandbox

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero/api"
)

// callExtism runs one export under Extism's convention: the kernel is
// reset, the input copied into a block of it and made the call's input,
// the export called; its output is what it gave output_set. A non-zero
// return or an error set with error_set is a failed call (KindFailed,
// ExitCode the return value, the message the plugin's error); the
// instance stays warm, as the guest returned normally.
func (inst *pluginInstance) callExtism(ctx context.Context, name string, shape exportShape, input []byte, maxOutput int64) ([]byte, error) {
	f := inst.export(name)
	k := inst.ext
	k.Reset()
	k.MaxOutput = maxOutput
	if err := k.SetInput(input, uint64(memSize(inst.mod))); err != nil {
		return nil, err
	}
	stack := inst.stack[:]
	stack[0] = 0
	if err := f.CallWithStack(ctx, stack); err != nil {
		return nil, err
	}
	rc := uint32(0)
	if shape.output {
		rc = api.DecodeU32(stack[0])
	}
	output := k.TakeOutput() // the caller owns it now
	if rc == 0 && k.ErrorMessage() == "" {
		return output, nil
	}
	msg := k.ErrorMessage()
	if msg == "" {
		msg = "no error message"
	}
	return output, &callError{kind: KindFailed, code: rc, keep: true,
		msg: fmt.Sprintf("%s returned %d: %s", name, int32(rc), msg)}
}
