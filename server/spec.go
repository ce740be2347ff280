package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/stint-run/stint/tasks"
)

// parseSpec reads a task spec from body and validates it: every spec it
// accepts passes tasks.Spec.Validate. Its errors map to 400 (malformed),
// 413 (too large) or 422 (invalid).
func parseSpec(body io.Reader) (tasks.Spec, error) {
	spec, err := decodeSpec(body)
	if err != nil {
		return tasks.Spec{}, err
	}
	if err := spec.Validate(); err != nil {
		return tasks.Spec{}, err
	}
	return spec, nil
}

// readBody reads a request body whole, into a buffer of its announced size
// when it has one (withBody has capped it). A failure to read is the
// client's: a 400, or a 413 over the cap.
func readBody(r *http.Request) ([]byte, error) {
	var b []byte
	var err error
	if n := r.ContentLength; n >= 0 {
		b = make([]byte, n)
		_, err = io.ReadFull(r.Body, b)
	} else {
		b, err = io.ReadAll(r.Body)
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, err
		}
		return nil, badRequest("reading the request body: %v", err)
	}
	return b, nil
}

// decodeSpec reads a task spec from body: one JSON object, no unknown
// fields (a misspelt field is an error, not silently a default). It is a
// tasks.Spec as encoding/json reads it (tasks.Limits takes a timeout as
// nanoseconds or "30s").
func decodeSpec(body io.Reader) (tasks.Spec, error) {
	var spec tasks.Spec
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return tasks.Spec{}, jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return tasks.Spec{}, jsonError(err)
		}
		return tasks.Spec{}, badRequest("invalid task spec JSON: unexpected data after the object")
	}
	return spec, nil
}

// jsonError turns a decoding error into a 400 (or keeps a body-too-large
// error, a 413).
func jsonError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return err
	}
	if errors.Is(err, io.EOF) {
		return badRequest("invalid task spec JSON: the body is empty")
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return badRequest("invalid task spec JSON at byte %d: %v", syn.Offset, err)
	}
	return badRequest("invalid task spec JSON: %v", err)
}

// looksLikeWasm reports whether b starts with the WebAssembly binary magic
// and version 1.
func looksLikeWasm(b []byte) bool {
	return bytes.HasPrefix(b, []byte("\x00asm\x01\x00\x00\x00"))
}
