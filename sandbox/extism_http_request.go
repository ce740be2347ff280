package sandbox

import (
	"encoding/json"
	"unicode/utf8"
)

// decodeHTTPRequestMeta decodes http_request's request JSON into meta,
// exactly as json.Unmarshal would. The plain shape Extism's PDKs send
// (an object of "url", "method" and "headers" or "header", each key at
// most once, strings with no escapes, headers an object of such strings)
// is read by hand: encoding/json's reflection took a third of the host's
// own time per request (docs/design/plugins.md, "The host's part alone, and
// Extism").
// Anything else (an escape, another key or another case of one, a
// repeated key, null, a number, bytes that are not UTF-8) goes to
// json.Unmarshal; TestDecodeHTTPRequestMeta checks that both agree.
func decodeHTTPRequestMeta(data []byte, meta *extismHTTPRequestMeta) error {
	if fastHTTPRequestMeta(data, meta) {
		return nil
	}
	*meta = extismHTTPRequestMeta{}
	return json.Unmarshal(data, meta)
}

// fastHTTPRequestMeta is decodeHTTPRequestMeta's hand-read path: false if
// data is not of the plain shape (meta is then to be cleared).
func fastHTTPRequestMeta(data []byte, meta *extismHTTPRequestMeta) bool {
	d := plainJSON{b: data}
	if !d.byte('{') {
		return false
	}
	var seen [4]bool // url, method, headers, header
	if d.peek('}') {
		d.i++
		return d.end()
	}
	for {
		key, ok := d.str()
		if !ok || !d.byte(':') {
			return false
		}
		var k int
		switch key {
		case "url":
			k = 0
		case "method":
			k = 1
		case "headers":
			k = 2
		case "header":
			k = 3
		default:
			return false
		}
		if seen[k] {
			return false
		}
		seen[k] = true
		switch k {
		case 0:
			meta.URL, ok = d.str()
		case 1:
			meta.Method, ok = d.str()
		case 2:
			meta.Headers, ok = d.strMap()
		case 3:
			meta.Header, ok = d.strMap()
		}
		if !ok {
			return false
		}
		if d.byte(',') {
			continue
		}
		return d.byte('}') && d.end()
	}
}

// plainJSON reads the plain JSON of fastHTTPRequestMeta.
type plainJSON struct {
	b []byte
	i int
}

func (d *plainJSON) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek skips white space and reports whether c is next.
func (d *plainJSON) peek(c byte) bool {
	d.space()
	return d.i < len(d.b) && d.b[d.i] == c
}

// byte skips white space and c, if c is next.
func (d *plainJSON) byte(c byte) bool {
	if !d.peek(c) {
		return false
	}
	d.i++
	return true
}

// end reports whether only white space is left.
func (d *plainJSON) end() bool {
	d.space()
	return d.i == len(d.b)
}

// str reads a string with no escapes, no control bytes and valid UTF-8.
func (d *plainJSON) str() (string, bool) {
	if !d.byte('"') {
		return "", false
	}
	start := d.i
	ascii := true
	for ; d.i < len(d.b); d.i++ {
		switch c := d.b[d.i]; {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			if !ascii && !utf8.Valid(s) {
				return "", false
			}
			return string(s), true
		case c == '\\' || c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// strMap reads an object of plain strings; a name seen twice keeps its
// last value, as encoding/json does.
func (d *plainJSON) strMap() (map[string]string, bool) {
	if !d.byte('{') {
		return nil, false
	}
	m := make(map[string]string, 4)
	if d.byte('}') {
		return m, true
	}
	for {
		k, ok := d.str()
		if !ok || !d.byte(':') {
			return nil, false
		}
		v, ok := d.str()
		if !ok {
			return nil, false
		}
		m[k] = v
		if d.byte(',') {
			continue
		}
		return m, d.byte('}')
	}
}
