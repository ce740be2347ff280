package sandbox

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// DefaultExtismMaxWasmBytes is ExtismManifestOptions.MaxWasmBytes's default.
const DefaultExtismMaxWasmBytes = 256 << 20

// ExtismManifestOptions are how ManifestFromExtism reads modules.
type ExtismManifestOptions struct {
	Dir               string       // what relative wasm paths and allowed_paths are relative to (default: the working directory)
	FetchURLs         bool         // allow a wasm url (it must have a hash); without it such a manifest is refused
	FetchInsecureHTTP bool         // allow an http url (default: https only)
	FetchAllowAddrs   []string     // special-purpose IP addresses a fetch may reach ("127.0.0.1", "[::1]:8080": that port only)
	MaxWasmBytes      int64        // the module's bytes (DefaultExtismMaxWasmBytes)
	Client            *http.Client // fetches URLs (default: 60 s timeout, no proxy, the address check); a Client given dials as it will
}

// extismManifest is Extism's JSON manifest (github.com/extism/extism,
// manifest/), every field it defines.
type extismManifest struct {
	Wasm         []extismWasm      `json:"wasm"`
	Memory       *extismMemory     `json:"memory"`
	Config       map[string]string `json:"config"`
	AllowedHosts []string          `json:"allowed_hosts"`
	AllowedPaths map[string]string `json:"allowed_paths"`
	TimeoutMS    *uint64           `json:"timeout_ms"`
}

type extismMemory struct {
	MaxPages             *uint32 `json:"max_pages"`
	Max                  *uint32 `json:"max"` // an alias of max_pages
	MaxHTTPResponseBytes *int64  `json:"max_http_response_bytes"`
	MaxVarBytes          *int64  `json:"max_var_bytes"`
}

type extismWasm struct {
	Path    *string           `json:"path"`
	Data    *string           `json:"data"`
	URL     *string           `json:"url"`
	Headers map[string]string `json:"headers"`
	Header  map[string]string `json:"header"` // an alias of headers
	Method  *string           `json:"method"`
	Name    *string           `json:"name"`
	Hash    *string           `json:"hash"`
}

// ManifestFromExtism reads an Extism JSON manifest: the Manifest it asks
// for (granting WASI, ExtismModule, and extism:host/user if the module
// imports it) and its module's bytes. What Stint cannot do is refused
// naming the field (docs/plugins.md, "Extism plugins").
func ManifestFromExtism(ctx context.Context, data []byte, opts ExtismManifestOptions) (Manifest, []byte, error) {
	var man Manifest
	bad := func(format string, args ...any) (Manifest, []byte, error) {
		return man, nil, fmt.Errorf("%w: extism manifest: %s", ErrManifest, fmt.Sprintf(format, args...))
	}
	if err := checkExtismFields(data); err != nil {
		return bad("%v", err)
	}
	var em extismManifest
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&em); err != nil {
		return bad("not JSON of Extism's manifest: %v", err)
	}
	if opts.MaxWasmBytes <= 0 {
		opts.MaxWasmBytes = DefaultExtismMaxWasmBytes
	}
	switch len(em.Wasm) {
	case 0:
		return bad("wasm: no module")
	case 1:
	default:
		return bad("wasm: %d modules: Stint loads one module (Extism's linking of several is not supported)", len(em.Wasm))
	}
	w := em.Wasm[0]
	wasm, name, err := w.read(ctx, opts)
	if err != nil {
		return bad("wasm[0]: %v", err)
	}
	man = Manifest{Name: name, HostModules: []string{wasiModule, ExtismModule}, Config: em.Config}
	// Extism's go-sdk gives a plugin the host functions its host app
	// passes with the manifest: here the runtime's extism:host/user
	// (extism.HostModules), granted when the module imports from it.
	if mods, err := ImportedModules(wasm); err == nil && slices.Contains(mods, extismUserModule) {
		man.HostModules = append(man.HostModules, extismUserModule)
	}
	if w.Hash != nil && *w.Hash != "" {
		man.SHA256 = strings.ToLower(*w.Hash)
		if got := SHA256(wasm); got != man.SHA256 {
			if w.URL != nil { // no digest of what a URL answered: the fetch is no oracle of a server's content
				return bad("wasm[0].hash: what the url answered does not have the sha256 the manifest expects (%s)", man.SHA256)
			}
			return bad("wasm[0].hash: the module's sha256 is %s, the manifest expects %s", got, man.SHA256)
		}
	}
	if m := em.Memory; m != nil {
		pages := m.MaxPages
		if pages == nil {
			pages = m.Max
		}
		if pages != nil {
			if *pages == 0 {
				return bad("memory.max_pages: 0 pages")
			}
			man.Limits.MemoryBytes = int64(*pages) * PageSize
		}
		if m.MaxHTTPResponseBytes != nil {
			if *m.MaxHTTPResponseBytes <= 0 || *m.MaxHTTPResponseBytes > MaxPluginBytes {
				return bad("memory.max_http_response_bytes %d: must be between 1 and %d", *m.MaxHTTPResponseBytes, MaxPluginBytes)
			}
			man.HTTP.MaxResponseBytes = *m.MaxHTTPResponseBytes
		}
		if m.MaxVarBytes != nil {
			if *m.MaxVarBytes <= 0 || *m.MaxVarBytes > MaxExtismVarBytes {
				return bad("memory.max_var_bytes %d: must be between 1 and %d (Stint's cap of an Extism plugin's vars)", *m.MaxVarBytes, MaxExtismVarBytes)
			}
			man.MaxVarBytes = *m.MaxVarBytes
		}
	}
	if em.TimeoutMS != nil {
		if *em.TimeoutMS == 0 || *em.TimeoutMS > uint64(365*24*time.Hour/time.Millisecond) {
			return bad("timeout_ms %d: must be between 1 and a year", *em.TimeoutMS)
		}
		man.Limits.Timeout = time.Duration(*em.TimeoutMS) * time.Millisecond
	}
	for _, h := range em.AllowedHosts {
		if h == "" {
			return bad("allowed_hosts: an empty host")
		}
	}
	man.HTTP.AllowedHosts = em.AllowedHosts
	hosts := make([]string, 0, len(em.AllowedPaths))
	for h := range em.AllowedPaths {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		guest := em.AllowedPaths[h]
		ro := strings.HasPrefix(h, "ro:")
		hp := strings.TrimPrefix(h, "ro:")
		if hp == "" || guest == "" {
			return bad("allowed_paths %q: %q: want a host path and a guest path", h, guest)
		}
		if !filepath.IsAbs(hp) && opts.Dir != "" {
			hp = filepath.Join(opts.Dir, hp)
		}
		abs, err := filepath.Abs(hp)
		if err != nil {
			return bad("allowed_paths %q: %v", h, err)
		}
		if !strings.HasPrefix(guest, "/") {
			guest = "/" + guest
		}
		man.Mounts = append(man.Mounts, Mount{HostPath: abs, GuestPath: guest, Writable: !ro})
	}
	return man, wasm, nil
}

// checkExtismFields refuses a field Extism's manifest does not define,
// naming it (json's own error names only the first, and not where).
func checkExtismFields(data []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	known := map[string]bool{"wasm": true, "memory": true, "config": true, "allowed_hosts": true, "allowed_paths": true, "timeout_ms": true}
	var errs []error
	unknownIn := func(where string, obj map[string]json.RawMessage, known map[string]bool) {
		var names []string
		for k := range obj {
			if !known[k] {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			errs = append(errs, fmt.Errorf("%s%q is not a field of Extism's manifest", where, n))
		}
	}
	unknownIn("", top, known)
	if raw, ok := top["memory"]; ok && string(raw) != "null" {
		var mem map[string]json.RawMessage
		if err := json.Unmarshal(raw, &mem); err != nil {
			return fmt.Errorf("memory: %w", err)
		}
		unknownIn("memory.", mem, map[string]bool{"max_pages": true, "max": true, "max_http_response_bytes": true, "max_var_bytes": true})
	}
	if raw, ok := top["wasm"]; ok {
		var ws []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &ws); err != nil {
			return fmt.Errorf("wasm: want a list of objects: %w", err)
		}
		for i, w := range ws {
			unknownIn(fmt.Sprintf("wasm[%d].", i), w, map[string]bool{"path": true, "data": true, "url": true,
				"headers": true, "header": true, "method": true, "name": true, "hash": true})
		}
	}
	return errors.Join(errs...)
}

// read returns the module's bytes and its name.
func (w extismWasm) read(ctx context.Context, opts ExtismManifestOptions) ([]byte, string, error) {
	n := 0
	for _, p := range []*string{w.Path, w.Data, w.URL} {
		if p != nil {
			n++
		}
	}
	if n != 1 {
		return nil, "", errors.New("want exactly one of path, data and url")
	}
	if w.Hash != nil && *w.Hash != "" {
		if h := *w.Hash; len(h) != 64 || strings.Trim(strings.ToLower(h), "0123456789abcdef") != "" {
			return nil, "", fmt.Errorf("hash %q is not a sha256 (64 hex digits)", h)
		}
	}
	if w.URL == nil && (w.Headers != nil || w.Header != nil || w.Method != nil) {
		return nil, "", errors.New("headers and method go only with a url")
	}
	name := ""
	if w.Name != nil {
		name = *w.Name
	}
	var wasm []byte
	var err error
	switch {
	case w.Path != nil:
		p := *w.Path
		if !filepath.IsAbs(p) && opts.Dir != "" {
			p = filepath.Join(opts.Dir, p)
		}
		wasm, err = readFileCapped(p, opts.MaxWasmBytes)
		if err != nil {
			return nil, "", fmt.Errorf("path: %w", err)
		}
		if name == "" {
			name = filepath.Base(p)
		}
	case w.Data != nil:
		wasm, err = base64.StdEncoding.DecodeString(*w.Data)
		if err != nil {
			return nil, "", fmt.Errorf("data: not base64: %w", err)
		}
		if int64(len(wasm)) > opts.MaxWasmBytes {
			return nil, "", fmt.Errorf("data: %d bytes, over the limit of %d", len(wasm), opts.MaxWasmBytes)
		}
	default:
		if !opts.FetchURLs {
			return nil, "", fmt.Errorf("url %s: fetching a module is not allowed (the embedder's FetchURLs; runner call --fetch)", *w.URL)
		}
		if w.Hash == nil || *w.Hash == "" {
			return nil, "", fmt.Errorf("url %s: a module fetched from a URL must have a hash (its sha256)", *w.URL)
		}
		wasm, err = w.fetch(ctx, opts)
		if err != nil {
			return nil, "", fmt.Errorf("url %s: %w", *w.URL, err)
		}
	}
	if name == "" {
		name = "main"
	}
	return wasm, name, nil
}

// fetch gets a module from its URL, at most opts.MaxWasmBytes, as
// ExtismManifestOptions says.
func (w extismWasm) fetch(ctx context.Context, opts ExtismManifestOptions) ([]byte, error) {
	if w.Method != nil && *w.Method != "" && !strings.EqualFold(*w.Method, http.MethodGet) {
		return nil, fmt.Errorf("method %q: a module is fetched with GET only", *w.Method)
	}
	u, err := url.Parse(*w.URL)
	if err != nil {
		return nil, unwrapURLError(err)
	}
	if err := checkFetchURL(u, opts); err != nil {
		return nil, err
	}
	header := http.Header{}
	for _, hs := range []map[string]string{w.Header, w.Headers} {
		for k, v := range hs {
			if err := checkFetchHeader(k); err != nil {
				return nil, err
			}
			header.Set(k, v)
		}
	}
	named := map[netip.Addr][]uint16{}
	for _, a := range opts.FetchAllowAddrs {
		host, port, ok := splitAllowedHost(a)
		ip, err := netip.ParseAddr(host)
		if !ok || err != nil {
			return nil, fmt.Errorf("fetch allow addr %q: want an IP address, with an optional :port", a)
		}
		named[ip.Unmap()] = append(named[ip.Unmap()], port)
	}
	var client http.Client
	if opts.Client != nil {
		client = *opts.Client
	} else {
		dialer := &net.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("denied: cannot parse the address %q", address)
			}
			return checkAddress(named, ap, "runner call --fetch-allow-addr (FetchAllowAddrs)")
		}}
		tr := &http.Transport{Proxy: nil, DialContext: dialer.DialContext, ForceAttemptHTTP2: true}
		defer tr.CloseIdleConnections()
		client = http.Client{Timeout: 60 * time.Second, Transport: tr}
	}
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxHTTPRedirects {
			return fmt.Errorf("stopped after %d redirects", maxHTTPRedirects)
		}
		if req.Method != http.MethodGet {
			return fmt.Errorf("redirect to %s: a %s, not a GET", req.URL.Redacted(), req.Method)
		}
		if err := checkFetchURL(req.URL, opts); err != nil {
			return fmt.Errorf("redirect to %s: %w", req.URL.Redacted(), err)
		}
		if !strings.EqualFold(req.URL.Host, u.Host) { // the manifest's headers are for its URL's host
			for k := range header {
				req.Header.Del(k)
			}
		}
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, unwrapURLError(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %s", resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, opts.MaxWasmBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > opts.MaxWasmBytes {
		return nil, fmt.Errorf("more than %d bytes", opts.MaxWasmBytes)
	}
	return data, nil
}

// checkFetchURL refuses a module URL (or a redirect's) that is not https
// (or http with FetchInsecureHTTP) or that carries user info.
func checkFetchURL(u *url.URL, opts ExtismManifestOptions) error {
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && opts.FetchInsecureHTTP:
	case u.Scheme == "http":
		return errors.New("an http URL: a module is fetched over https only (http with runner call --fetch-insecure-http, FetchInsecureHTTP)")
	default:
		return fmt.Errorf("scheme %q: want an https URL", u.Scheme)
	}
	if u.User != nil {
		return errors.New("a URL with user info (give credentials in headers)")
	}
	if u.Host == "" {
		return errors.New("a URL with no host")
	}
	return nil
}

// checkFetchHeader refuses a manifest header that would change where or
// how a module's GET is sent, rather than what it asks for.
func checkFetchHeader(name string) error {
	k := http.CanonicalHeaderKey(name)
	switch {
	case k == "Host", k == "Connection", k == "Keep-Alive", k == "Upgrade", k == "Te", k == "Trailer",
		k == "Transfer-Encoding", k == "Expect", k == "Forwarded", k == "Via",
		k == "X-Http-Method-Override", k == "X-Http-Method", k == "X-Method-Override",
		strings.HasPrefix(k, "Content-"), strings.HasPrefix(k, "Proxy-"), strings.HasPrefix(k, "X-Forwarded-"):
		return fmt.Errorf("header %q: not one a module's fetch sends (it would change where or how the GET goes)", name)
	}
	return nil
}

// readFileCapped reads at most max bytes of a regular file.
func readFileCapped(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: more than %d bytes", path, max)
	}
	return data, nil
}

// ImportedModules returns the modules wasm imports functions from, each
// once, in order: what a Manifest grants it (Manifest.HostModules).
func ImportedModules(wasm []byte) ([]string, error) {
	secs, ok := wasmbin.Sections(wasm)
	if !ok {
		return nil, errors.New("not a wasm module")
	}
	bad := errors.New("malformed import section")
	var mods []string
	for _, sec := range secs {
		if sec.ID != wasmbin.SecImport {
			continue
		}
		p := wasm[sec.Start:sec.End]
		count, n, err := wasmbin.U32(p)
		if err != nil {
			return nil, bad
		}
		p = p[n:]
		for range count {
			var mod string
			for i := range 2 { // module and field names
				l, n, err := wasmbin.U32(p)
				if err != nil || uint64(l) > uint64(len(p)-n) {
					return nil, bad
				}
				if i == 0 {
					mod = string(p[n : n+int(l)])
				}
				p = p[n+int(l):]
			}
			if len(p) < 1 {
				return nil, bad
			}
			kind := p[0]
			if p, ok = skipImportDesc(kind, p[1:]); !ok {
				return nil, bad
			}
			if kind == 0 && !slices.Contains(mods, mod) {
				mods = append(mods, mod)
			}
		}
	}
	return mods, nil
}

// skipImportDesc skips an import's description of the given kind
// (function, table, memory, global), or reports false.
func skipImportDesc(kind byte, p []byte) ([]byte, bool) {
	uleb := func(p []byte) ([]byte, bool) { // any unsigned LEB128, up to 64 bits
		for i := 0; i < 10 && i < len(p); i++ {
			if p[i] < 0x80 {
				return p[i+1:], true
			}
		}
		return nil, false
	}
	limits := func(p []byte) ([]byte, bool) { // flags, min, optional max
		if len(p) < 1 {
			return nil, false
		}
		flags, p := p[0], p[1:]
		p, ok := uleb(p)
		if ok && flags&1 != 0 {
			p, ok = uleb(p)
		}
		return p, ok
	}
	switch kind {
	case 0: // function: a type index
		return uleb(p)
	case 1: // table: a reference type, limits
		if len(p) < 1 {
			return nil, false
		}
		return limits(p[1:])
	case 2: // memory: limits
		return limits(p)
	case 3: // global: a value type, mutability
		if len(p) < 2 {
			return nil, false
		}
		return p[2:], true
	}
	return nil, false
}
