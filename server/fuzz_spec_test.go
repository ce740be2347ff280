package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stint-run/stint/tasks"
)

// largeSpecs are task spec bodies with large fields: each of args, env,
// queue, idempotency key and mounts at its cap (tasks.MaxCaps) and one
// over it, for the fuzz targets' seeds.
func largeSpecs(module string) [][]byte {
	m := tasks.MaxCaps
	list := func(n int, item string) string {
		return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
	}
	env := func(n, size int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"V%07d":"%s"`, i, strings.Repeat("v", size-9))
		}
		return b.String() + "}"
	}
	mount := `{"host_path":"/data","guest_path":"/m"}`
	var out [][]byte
	for _, field := range []string{
		`"args":` + list(int(m.Args), `"a"`),
		`"args":` + list(int(m.Args)+1, `"a"`),
		`"args":` + list(4, `"`+strings.Repeat("a", int(m.ArgsBytes)/4)+`"`),
		`"args":` + list(5, `"`+strings.Repeat("a", int(m.ArgsBytes)/4)+`"`),
		`"env":` + env(int(m.Env), 10),
		`"env":` + env(int(m.Env)+1, 10),
		`"env":` + env(5, int(m.EnvBytes)/4),
		`"env":{"` + strings.Repeat("N", tasks.MaxEnvName+1) + `":""}`,
		`"queue":"` + strings.Repeat("q", int(m.Queue)) + `"`,
		`"queue":"` + strings.Repeat("q", int(m.Queue)+1) + `"`,
		`"idempotency_key":"` + strings.Repeat("k", int(m.IdempotencyKey)) + `"`,
		`"idempotency_key":"` + strings.Repeat("k", int(m.IdempotencyKey)+1) + `"`,
		`"idempotency_key":"` + strings.Repeat("k", 1<<20) + `"`,
		`"mounts":` + list(int(m.Mounts), mount),
		`"mounts":` + list(int(m.Mounts)+1, mount),
		`"mounts":[{"host_path":"/` + strings.Repeat("d", tasks.MaxMountPath) + `","guest_path":"/m"}]`,
	} {
		out = append(out, []byte(`{"module":"`+module+`",`+field+`}`))
	}
	return out
}

// FuzzDecodeSpec: the API's task spec decoding and validation never
// panics; it refuses with a 400, 413 or 422, and a field over its cap
// (*tasks.LimitError) with a 413; every spec it accepts passes
// tasks.Spec.Validate (so is within tasks.MaxCaps), encodes, and decodes
// again to the same spec. Seeds: testdata/fuzz/FuzzDecodeSpec, the f.Add
// calls below and largeSpecs (each field at its cap and one over).
func FuzzDecodeSpec(f *testing.F) {
	const sum = "5807639c7fe862664ddd6e0f72568b313045c7c97fc4a7665cfa3a1ccf876903"
	for _, s := range []string{
		`{"module":"` + sum + `"}`,
		`{"module":"` + sum + `","input":"aGk=","args":["a","b"],"env":{"K":"v"},` +
			`"mounts":[{"host_path":"/data","guest_path":"/in","writable":true}],` +
			`"limits":{"memory_bytes":65536,"timeout":"1m30s","stdout":10,"stderr":10,"checkpoint":10,"disk_bytes":4096,"disk_files":3},` +
			`"max_attempts":2,"priority":-3,"queue":"q","idempotency_key":"k","run_at":"2030-01-02T15:04:05+02:00"}`,
		`{"module":"` + sum + `","limits":{"timeout":1500000000}}`,
		`{"module":"` + sum + `","limits":null,"args":null,"input":null}`,
		`{"module":"` + sum + `","env":{"":"x"}}`,
		`{"module":"` + sum + `"} {}`,
		`{"module":"abc"}`,
		`{}`, `[]`, `null`, ``, `{"module":`,
	} {
		f.Add([]byte(s))
	}
	for _, s := range largeSpecs(sum) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		spec, err := parseSpec(bytes.NewReader(body))
		if err != nil {
			switch code := statusOf(err); code {
			case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
			default:
				t.Fatalf("refused with status %d (want 400, 413 or 422): %v", code, err)
			}
			var le *tasks.LimitError
			if errors.As(err, &le) && statusOf(err) != http.StatusRequestEntityTooLarge {
				t.Fatalf("a field over its cap is not a 413: %v", err)
			}
			return
		}
		if err := spec.Validate(); err != nil {
			t.Fatalf("an accepted spec does not pass tasks validation: %v", err)
		}
		enc, err := json.Marshal(spec)
		if err != nil {
			t.Fatalf("an accepted spec does not encode: %v", err)
		}
		again, err := parseSpec(bytes.NewReader(enc))
		if err != nil {
			t.Fatalf("an accepted spec, encoded, is refused: %v\n%s", err, enc)
		}
		enc2, err := json.Marshal(again)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("an accepted spec changes when decoded again (%v):\n%s\n%s", err, enc, enc2)
		}
	})
}
