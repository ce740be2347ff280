package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
)

// FuzzDecodeSpec: the API's task spec decoding and validation never
// panics; it refuses with a 400, 413 or 422; every spec it accepts passes
// tasks.Spec.Validate, encodes, and decodes again to the same spec.
// Seeds: testdata/fuzz/FuzzDecodeSpec and the f.Add calls below.
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
	f.Fuzz(func(t *testing.T, body []byte) {
		spec, err := parseSpec(bytes.NewReader(body))
		if err != nil {
			switch code := statusOf(err); code {
			case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
			default:
				t.Fatalf("refused with status %d (want 400, 413 or 422): %v", code, err)
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
