//go:build wasip1

// extism-greet is a plugin written with Extism's Go PDK, unchanged: Stint
// runs it through its host side of Extism's ABI (sandbox/extism.go). Build:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o extism-greet.wasm ./wasm-examples/extism-greet
package main

import (
	"errors"
	"strconv"
	"strings"

	"github.com/extism/go-pdk"
)

// greet outputs "Hello, INPUT!".
//
//go:wasmexport greet
func greet() int32 {
	pdk.OutputString("Hello, " + string(pdk.Input()) + "!")
	return 0
}

// config outputs the config value named by the input, or "<none>".
//
//go:wasmexport config
func config() int32 {
	v, ok := pdk.GetConfig(pdk.InputString())
	if !ok {
		v = "<none>"
	}
	pdk.OutputString(v)
	return 0
}

// count counts its calls in a var ("count") and outputs the count.
//
//go:wasmexport count
func count() int32 {
	n := pdk.GetVarInt("count") + 1
	pdk.SetVarInt("count", n)
	pdk.OutputString(strconv.Itoa(n))
	return 0
}

// log logs the input at every level and outputs nothing.
//
//go:wasmexport log
func log() int32 {
	in := pdk.InputString()
	pdk.Log(pdk.LogDebug, "debug: "+in)
	pdk.Log(pdk.LogInfo, "info: "+in)
	pdk.Log(pdk.LogWarn, "warn: "+in)
	pdk.Log(pdk.LogError, "error: "+in)
	return 0
}

// fail sets an error and returns 1.
//
//go:wasmexport fail
func fail() int32 {
	pdk.SetError(errors.New("failed on purpose: " + pdk.InputString()))
	return 1
}

// spin never returns.
//
//go:wasmexport spin
func spin() int32 {
	for {
	}
}

var hogged [][]byte

// hog grows the Go heap (linear memory) without end.
//
//go:wasmexport hog
func hog() int32 {
	for {
		b := make([]byte, 1<<20)
		for i := range b {
			b[i] = 1
		}
		hogged = append(hogged, b)
	}
}

// kernelhog allocates Extism memory blocks without end.
//
//go:wasmexport kernelhog
func kernelhog() int32 {
	for {
		pdk.Allocate(1 << 20)
	}
}

// http sends an HTTP request: the input is "URL" (a GET) or
// "POST URL BODY" (default: a GET of https://example.com/). It outputs
// "STATUS X-TEST BODY": the response's status, its X-Test header and its
// body.
//
//go:wasmexport http
func http() int32 {
	in := strings.SplitN(pdk.InputString(), " ", 3)
	url := "https://example.com/"
	if in[0] != "" {
		url = in[0]
	}
	req := pdk.NewHTTPRequest(pdk.MethodGet, url)
	if len(in) == 3 && in[0] == "POST" {
		req = pdk.NewHTTPRequest(pdk.MethodPost, in[1]).SetBody([]byte(in[2]))
	}
	req.SetHeader("X-Plugin", "extism-greet")
	res := req.Send()
	pdk.OutputString(strconv.Itoa(int(res.Status())) + " " + res.Headers()["x-test"] + " " + string(res.Body()))
	return 0
}

func main() {}
