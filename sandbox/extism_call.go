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
	f := inst.funcs[name]
	if f == nil {
		f = inst.mod.ExportedFunction(name)
		inst.funcs[name] = f
	}
	k := inst.ext
	k.reset()
	k.maxOutput = maxOutput
	if err := k.setInputSafely(input, uint64(memSize(inst.mod))); err != nil {
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
	output := k.output
	if !k.hasOutput {
		output = []byte{}
	}
	k.output = nil // the caller owns it now
	if rc == 0 && k.errMsg == "" {
		return output, nil
	}
	msg := k.errMsg
	if msg == "" {
		msg = "no error message"
	}
	return output, &callError{kind: KindFailed, code: rc, keep: true,
		msg: fmt.Sprintf("%s returned %d: %s", name, int32(rc), msg)}
}

// setInputSafely is setInput with its memory-limit trap turned into an
// error (it runs outside the guest, where nothing recovers a panic).
func (k *extismKernel) setInputSafely(input []byte, linear uint64) (err error) {
	defer func() {
		if p := recover(); p != nil {
			ke, ok := p.(*kernelError)
			if !ok {
				panic(p)
			}
			err = ke
		}
	}()
	k.setInput(input, linear)
	return nil
}
