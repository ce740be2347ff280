package sandbox

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// checkDecodeHTTPRequestMeta checks that decodeHTTPRequestMeta gives what
// json.Unmarshal gives for data: the same error or none, the same request.
func checkDecodeHTTPRequestMeta(t *testing.T, data []byte) {
	t.Helper()
	var got, want extismHTTPRequestMeta
	gotErr := decodeHTTPRequestMeta(data, &got)
	wantErr := json.Unmarshal(data, &want)
	if wantErr != nil {
		require.Error(t, gotErr, "%q", data)
		require.Equal(t, wantErr.Error(), gotErr.Error(), "%q", data)
		return
	}
	require.NoError(t, gotErr, "%q", data)
	require.Equal(t, want, got, "%q", data)
}

// The hand-read request JSON decodes as encoding/json does, for random
// requests near the PDKs' shape: other keys and cases, escapes, control
// bytes, bytes that are not UTF-8, repeated keys, nulls, numbers, white
// space, truncations and flipped bytes.
func TestDecodeHTTPRequestMeta(t *testing.T) {
	t.Parallel()
	// The PDKs' plain shape takes the hand-read path.
	for _, s := range []string{
		`{"method":"GET","headers":{"X-Plugin":"extism-greet"},"url":"http://127.0.0.1:8080/"}`,
		`{"url":"https://example.com/a?b=c","method":"POST","header":{"a":"1","b":"é"}}`,
		` { "url" : "x" , "headers" : { } } `, `{}`,
	} {
		var m extismHTTPRequestMeta
		require.True(t, fastHTTPRequestMeta([]byte(s), &m), s)
		checkDecodeHTTPRequestMeta(t, []byte(s))
	}

	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x26))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	ws := func() string {
		if rng.IntN(3) > 0 {
			return ""
		}
		return pick(" ", "\t", "\n", "\r", "  ", "\v", "\u00a0")
	}
	str := func() string {
		var b strings.Builder
		b.WriteByte('"')
		for range rng.IntN(12) {
			b.WriteString(pick("a", "Z", "0", "/", ":", " ", "é", "世", "\u2028", `\"`, `\\`, `\n`, `\u0041`, `\ud800`, "\x01", "\x7f", "\xff", "\xc3", "<&>"))
		}
		b.WriteByte('"')
		return b.String()
	}
	object := func() string {
		if rng.IntN(8) == 0 {
			return pick("null", "1", `"s"`, "[]", "{", `{"a":1}`, `{"a":null}`)
		}
		var b strings.Builder
		b.WriteString("{" + ws())
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteString(ws() + "," + ws())
			}
			b.WriteString(str() + ws() + ":" + ws() + str())
		}
		b.WriteString(ws() + "}")
		return b.String()
	}
	value := func(key string) string {
		if strings.Contains(strings.ToLower(key), "header") {
			return object()
		}
		if rng.IntN(10) == 0 {
			return pick("null", "12", "true", "{}", `"`)
		}
		return str()
	}
	for range 20_000 {
		var b strings.Builder
		b.WriteString(ws() + "{" + ws())
		for i := range rng.IntN(5) {
			if i > 0 {
				b.WriteString(ws() + "," + ws())
			}
			key := pick(`"url"`, `"method"`, `"headers"`, `"header"`, `"URL"`, `"Method"`, `"HEADERS"`, `"other"`, `"u\u0072l"`, `"url "`)
			b.WriteString(key + ws() + ":" + ws() + value(key))
		}
		b.WriteString(ws() + "}" + ws())
		data := []byte(b.String())
		switch rng.IntN(10) {
		case 0:
			data = data[:rng.IntN(len(data)+1)]
		case 1:
			data[rng.IntN(len(data))] = byte(rng.IntN(256))
		case 2:
			data = append(data, pick(",", "}", "x", "{}")...)
		}
		checkDecodeHTTPRequestMeta(t, data)
	}
}

// FuzzDecodeHTTPRequestMeta: decodeHTTPRequestMeta agrees with
// json.Unmarshal on any input.
func FuzzDecodeHTTPRequestMeta(f *testing.F) {
	for _, s := range []string{
		`{"method":"GET","headers":{"X-Plugin":"extism-greet"},"url":"http://127.0.0.1:8080/"}`,
		`{"url":"a","url":"b"}`, `{"headers":{"a":"1"},"headers":{"b":"2"}}`, `{"URL":"x"}`,
		`{"url":"\u0041"}`, "{\"url\":\"\xff\"}", `{"headers":null}`, `{"url":"x",}`, ``, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecodeHTTPRequestMeta(t, data)
	})
}
