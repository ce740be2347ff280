package testwasm

// Modules that are hard on the runner, generated rather than committed
// (internal/testwasm/wat compiles every committed fixture with plain wazero,
// and these would take seconds or never end).

// BrTableModule is a WASI command whose _start is one block holding a
// br_table of targets entries, all to the block. wazero compiles it in
// time quadratic in targets: on a 2-core machine about 0.4 s for 10,000,
// 0.75 s for 20,000, 1.5-2 s for 40,000, 14 s for 100,000 (under -race:
// 2.3 s for 10,000, 7.7 s for 20,000). salt goes into a custom section,
// so that tests sharing a compilation cache do not share the module.
func BrTableModule(targets int, salt string) []byte {
	body := []byte{0x02, 0x40, 0x41, 0x00, 0x0e} // block; i32.const 0; br_table
	body = append(body, uleb(uint32(targets))...)
	for range targets {
		body = append(body, 0)
	}
	body = append(body, 0, 0x0b) // default target; end of block
	return command(salt, [][]byte{{}}, []uint32{0}, [][]byte{body})
}

// DoubleRecursionModule is a WASI command whose _start calls f(depth), and
// f(n) calls f(n-1) twice while n > 0: 2^depth calls and no loop at all,
// so wazero's close-on-context-done, which checks at loop headers, never
// stops it. With depth 60 it runs for centuries.
func DoubleRecursionModule(depth int) []byte {
	start := append([]byte{0x41}, sleb(int32(depth))...) // i32.const depth
	start = append(start, 0x10, 0x01)                    // call f
	half := []byte{0x20, 0x00, 0x41, 0x01, 0x6b, 0x10, 0x01}
	f := []byte{0x20, 0x00, 0x04, 0x40} // local.get 0; if
	f = append(f, half...)
	f = append(f, half...)
	f = append(f, 0x0b) // end if
	// type 0: () -> (); type 1: (i32) -> ()
	return command("", [][]byte{{}, {0x7f}}, []uint32{0, 1}, [][]byte{start, f})
}

// command assembles a module: the given function types (their i32/i64
// params, no results), functions (their type index and body without the
// final end), function 0 exported as _start, and a custom section holding
// salt if it is not empty.
func command(salt string, params [][]byte, types []uint32, bodies [][]byte) []byte {
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	ts := uleb(uint32(len(params)))
	for _, p := range params {
		ts = append(ts, 0x60)
		ts = append(ts, uleb(uint32(len(p)))...)
		ts = append(ts, p...)
		ts = append(ts, 0)
	}
	m = appendSection(m, 1, ts)
	fs := uleb(uint32(len(types)))
	for _, t := range types {
		fs = append(fs, uleb(t)...)
	}
	m = appendSection(m, 3, fs)
	ex := append([]byte{1, 6}, "_start"...)
	m = appendSection(m, 7, append(ex, 0, 0))
	code := uleb(uint32(len(bodies)))
	for _, b := range bodies {
		fb := append([]byte{0}, b...) // no locals
		fb = append(fb, 0x0b)
		code = append(code, uleb(uint32(len(fb)))...)
		code = append(code, fb...)
	}
	m = appendSection(m, 10, code)
	if salt != "" {
		name := "stint-test-salt"
		cs := append(uleb(uint32(len(name))), name...)
		m = appendSection(m, 0, append(cs, salt...))
	}
	return m
}

func appendSection(m []byte, id byte, body []byte) []byte {
	m = append(m, id)
	m = append(m, uleb(uint32(len(body)))...)
	return append(m, body...)
}

func uleb(n uint32) []byte {
	var b []byte
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func sleb(n int32) []byte {
	var b []byte
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if (n == 0 && c&0x40 == 0) || (n == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
