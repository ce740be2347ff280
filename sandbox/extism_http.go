package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/stint-run/stint/sandbox/internal/extismkernel"
)

// Defaults and bounds of HTTPGrant.
const (
	DefaultHTTPMaxRequests      = 16               // HTTP requests (redirects included) one call may make
	DefaultHTTPMaxRequestBytes  = 1 << 20          // a request's body
	DefaultHTTPMaxResponseBytes = 4 << 20          // a response's body
	DefaultHTTPTimeout          = 10 * time.Second // a request's (always within the call's own deadline)
	// maxHTTPRedirects caps the redirects one request follows.
	maxHTTPRedirects = 10
	// maxHTTPHeaderBytes caps a response's headers.
	maxHTTPHeaderBytes = 64 << 10
)

// HTTPGrant is what an Extism plugin may reach with http_request, deny by
// default: only hosts AllowedHosts names, over http or https, and never a
// special-purpose address (IANA's registries) the list does not name
// itself, checked on the address dialled (docs/plugins.md, "HTTP").
type HTTPGrant struct {
	AllowedHosts                      []string      // exact names, IP literals or globs ("*.example.com", "*"), each with an optional ":port"; empty: none
	MaxRequests                       int           // requests of one call, redirects included (DefaultHTTPMaxRequests)
	MaxRequestBytes, MaxResponseBytes int64         // a body's bytes (DefaultHTTPMaxRequestBytes, DefaultHTTPMaxResponseBytes)
	Timeout                           time.Duration // one request, inside the call's deadline (DefaultHTTPTimeout)
}

// withDefaults fills g's zero fields.
func (g HTTPGrant) withDefaults() HTTPGrant {
	if g.MaxRequests == 0 {
		g.MaxRequests = DefaultHTTPMaxRequests
	}
	if g.MaxRequestBytes == 0 {
		g.MaxRequestBytes = DefaultHTTPMaxRequestBytes
	}
	if g.MaxResponseBytes == 0 {
		g.MaxResponseBytes = DefaultHTTPMaxResponseBytes
	}
	if g.Timeout == 0 {
		g.Timeout = DefaultHTTPTimeout
	}
	return g
}

// validateExtism reports what m's Extism fields (HTTP, MaxVarBytes) ask
// that the runtime refuses.
func (m *Manifest) validateExtism() []error {
	var errs []error
	g := m.HTTP
	for _, h := range g.AllowedHosts {
		host, _, ok := splitAllowedHost(h)
		if !ok {
			errs = append(errs, fmt.Errorf("allowed host %q: want a host name, an IP address or a glob like *.example.com, with an optional :port (1-65535)", h))
		} else if _, err := path.Match(host, ""); err != nil {
			errs = append(errs, fmt.Errorf("allowed host %q: bad glob: %w", h, err))
		}
	}
	if g.MaxRequests < 0 || g.MaxRequestBytes < 0 || g.MaxResponseBytes < 0 || g.Timeout < 0 {
		errs = append(errs, errors.New("http: max requests, max request and response bytes and timeout must not be negative"))
	}
	if g.MaxRequestBytes > MaxPluginBytes || g.MaxResponseBytes > MaxPluginBytes {
		errs = append(errs, fmt.Errorf("http: max request and response bytes must be at most %d", MaxPluginBytes))
	}
	if m.MaxVarBytes < 0 || m.MaxVarBytes > MaxExtismVarBytes {
		errs = append(errs, fmt.Errorf("max var bytes %d: must be between 0 and %d", m.MaxVarBytes, MaxExtismVarBytes))
	}
	return errs
}

func isIPLiteral(h string) bool {
	_, err := netip.ParseAddr(strings.Trim(h, "[]"))
	return err == nil
}

// splitAllowedHost splits an entry of AllowedHosts into its host (lower
// case, an IP literal without brackets) and its port (0: every port);
// false if it is neither a host nor a host:port.
func splitAllowedHost(entry string) (string, uint16, bool) {
	if isIPLiteral(entry) {
		return strings.ToLower(strings.Trim(entry, "[]")), 0, true
	}
	host, port := entry, uint16(0)
	if h, p, err := net.SplitHostPort(entry); err == nil {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 || p != strconv.FormatUint(n, 10) {
			return "", 0, false
		}
		host, port = h, uint16(n)
		if isIPLiteral(host) {
			return strings.ToLower(host), port, true
		}
	}
	if host == "" || strings.ContainsAny(host, "/ :[]") {
		return "", 0, false
	}
	return strings.ToLower(host), port, true
}

// urlPort is the port a URL of scheme http or https reaches.
func urlPort(u *url.URL) uint16 {
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return 0 // never a port an entry names
		}
		return uint16(n)
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}

// specialPurpose are the ranges a grant of "*" (or of any name) does not
// reach unless allowed_hosts names the address itself: every range of
// IANA's IPv4 and IPv6 Special-Purpose Address Registries (those marked
// globally reachable too: anycast and AS112 are no one's API), multicast,
// the deprecated site-local and IPv4-compatible ranges, and the limited
// broadcast address. An IPv4-mapped address is checked as its IPv4
// address (mapped, a public one is public).
var specialPurpose = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		// IPv4 (iana-ipv4-special-registry), then multicast.
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24",
		"192.88.99.0/24", "192.168.0.0/16", "192.175.48.0/24", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4", "255.255.255.255/32",
		"224.0.0.0/4",
		// IPv6 (iana-ipv6-special-registry), then multicast, site-local
		// and IPv4-compatible (::/96, with :: and ::1).
		"::1/128", "::/128", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64",
		"100:0:0:1::/64", "2001::/23", "2001:db8::/32", "2002::/16", "2620:4f:8000::/48",
		"3fff::/20", "5f00::/16", "fc00::/7", "fe80::/10",
		"ff00::/8", "fec0::/10", "::/96",
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// isSpecialPurpose reports whether ip (unmapped) lies in a range of
// specialPurpose.
func isSpecialPurpose(ip netip.Addr) bool {
	for _, p := range specialPurpose {
		if p.Contains(ip) {
			return true
		}
	}
	return !ip.IsGlobalUnicast()
}

// pluginHTTP is a plugin's HTTP client under its grant; nil when the
// grant allows no host.
type pluginHTTP struct {
	grant HTTPGrant
	// named are the IP literals of AllowedHosts (unmapped), reachable even
	// if not public, each on the ports named with it (0: every port).
	named  map[netip.Addr][]uint16
	hosts  []allowedHost // AllowedHosts, split
	client *http.Client
	log    *zap.Logger
	plugin string
}

// httpCall is one call's HTTP state (in its runState): the requests made,
// and the last response's status and headers (http_status_code,
// http_headers).
type httpCall struct {
	c        *pluginHTTP
	requests int
	status   int32
	headers  []byte // JSON object; nil: none
}

// newPluginHTTP builds the client for g (defaults filled); nil if g allows
// no host.
func newPluginHTTP(g HTTPGrant, log *zap.Logger, plugin string) *pluginHTTP {
	if len(g.AllowedHosts) == 0 {
		return nil
	}
	g = g.withDefaults()
	h := &pluginHTTP{grant: g, named: map[netip.Addr][]uint16{}, log: log, plugin: plugin}
	for _, a := range g.AllowedHosts {
		host, port, ok := splitAllowedHost(a)
		if !ok {
			continue // refused by validateExtism before any plugin loads
		}
		h.hosts = append(h.hosts, allowedHost{host: host, port: port})
		if ip, err := netip.ParseAddr(host); err == nil {
			h.named[ip.Unmap()] = append(h.named[ip.Unmap()], port)
		}
	}
	// The request's context (its Timeout, inside the call's deadline)
	// bounds every step, dial, handshake and headers included: no timeout
	// of the transport's own races it (one did, and the plugin saw another
	// error for the same timeout).
	dialer := &net.Dialer{Control: h.checkDial}
	tr := &http.Transport{
		Proxy:                  nil, // never a proxy from the environment
		DialContext:            dialer.DialContext,
		MaxResponseHeaderBytes: maxHTTPHeaderBytes,
		MaxIdleConns:           4,
		IdleConnTimeout:        30 * time.Second,
		ForceAttemptHTTP2:      true,
	}
	h.client = &http.Client{Transport: tr, CheckRedirect: h.checkRedirect}
	return h
}

// checkDial refuses a connection to an address that is not public unless
// AllowedHosts names it. It runs on the address resolved, just before
// connecting.
func (h *pluginHTTP) checkDial(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("denied: cannot parse the address %q", address)
	}
	return checkAddress(h.named, ap, "allowed_hosts")
}

// checkAddress refuses ap if its address is special-purpose
// (isSpecialPurpose) and named does not name it on its port (0: every
// port); list is what names addresses, for the error. The plugin's HTTP
// and a manifest's fetch share it.
func checkAddress(named map[netip.Addr][]uint16, ap netip.AddrPort, list string) error {
	ip := ap.Addr().Unmap()
	for _, port := range named[ip] {
		if port == 0 || port == ap.Port() {
			return nil
		}
	}
	switch {
	case !isSpecialPurpose(ip):
	case len(named[ip]) > 0:
		return fmt.Errorf("denied: %s is named in %s with other ports than %d (a special-purpose address is reached on the ports named with it only)", ip, list, ap.Port())
	default:
		return fmt.Errorf("denied: %s is a loopback, private or link-local address; %s must name it to reach it (so is every special-purpose address of IANA's registries)", ip, list)
	}
	return nil
}

// allowedHost is an entry of AllowedHosts: a host (lower case, an IP
// literal without brackets) or glob, and its port (0: every port).
type allowedHost struct {
	host string
	port uint16
}

// allowed reports whether host (any case) on port is in AllowedHosts.
func (h *pluginHTTP) allowed(host string, port uint16) bool {
	host = strings.ToLower(strings.Trim(host, "[]"))
	for _, a := range h.hosts {
		if a.port != 0 && a.port != port {
			continue
		}
		if a.host == host {
			return true
		}
		if ok, _ := path.Match(a.host, host); ok {
			return true
		}
	}
	return false
}

// checkURL refuses a URL the grant does not allow.
func (h *pluginHTTP) checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("denied: scheme %q (http and https only)", u.Scheme)
	}
	if u.User != nil {
		return errors.New("denied: a URL with user info")
	}
	if !h.allowed(u.Hostname(), urlPort(u)) {
		return fmt.Errorf("denied: host %q is not in allowed_hosts (on port %d)", u.Hostname(), urlPort(u))
	}
	return nil
}

// checkRedirect re-checks a redirect's URL against the grant and counts
// it as a request of the call.
func (h *pluginHTTP) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxHTTPRedirects {
		return fmt.Errorf("stopped after %d redirects", maxHTTPRedirects)
	}
	if err := h.checkURL(req.URL); err != nil {
		return fmt.Errorf("redirect to %s: %w", req.URL.Redacted(), err)
	}
	if st := stateOf(req.Context()); st != nil {
		if err := st.http.count(); err != nil {
			return err
		}
	}
	h.log.Debug("plugin http redirect", zap.String("plugin", h.plugin), zap.String("host", req.URL.Host))
	return nil
}

// count counts a request against the call's budget.
func (c *httpCall) count() error {
	if c.requests >= c.c.grant.MaxRequests {
		return fmt.Errorf("denied: over the call's budget of %d HTTP requests", c.c.grant.MaxRequests)
	}
	c.requests++
	return nil
}

// extismHTTPRequestMeta is http_request's request, as Extism's PDKs send it.
type extismHTTPRequestMeta struct {
	URL     string            `json:"url"`
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers"`
	Header  map[string]string `json:"header"` // some PDKs' spelling
}

// httpDenied traps http_request with msg.
func httpDenied(msg string) {
	panic(&extismkernel.Error{Func: "http_request", Msg: msg})
}

// extismHTTPRequest is http_request(request, body) -> response body: the
// request is a block of JSON ({"url", "method", "headers"}), body a block
// (0: none); it returns a new block with the response's body (0 if
// empty) and keeps its status and headers for http_status_code and
// http_headers. A request the grant does not allow, or that fails, traps
// (as in Extism's hosts); both blocks are left to the guest.
func extismHTTPRequest(c extismCall, s []uint64) {
	hc := &c.st.http
	h := hc.c
	if h == nil {
		httpDenied("denied: the plugin's manifest allows no hosts (allowed_hosts)")
	}
	var meta extismHTTPRequestMeta
	if err := decodeHTTPRequestMeta(c.k.Block("http_request", s[0]), &meta); err != nil { // extism_http_request.go
		httpDenied("the request is not JSON of {url, method, headers}: " + err.Error())
	}
	var body []byte
	if s[1] != 0 {
		body = c.k.Block("http_request", s[1])
	}
	if int64(len(body)) > h.grant.MaxRequestBytes {
		httpDenied(fmt.Sprintf("denied: a request body of %d bytes is over its limit of %d", len(body), h.grant.MaxRequestBytes))
	}
	method := strings.ToUpper(meta.Method)
	if method == "" {
		method = http.MethodGet
	}
	// The request ends at its Timeout or with the call, whichever comes
	// first: when the call's deadline comes first (as with the defaults,
	// 10 s each), the call's own context is the request's, with no timer
	// or goroutine of its own.
	ctx := c.st.hard
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > h.grant.Timeout {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.grant.Timeout)
		defer cancel()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	// NewRequestWithContext parses the URL (url.Parse); the request is
	// checked before it is sent.
	req, err := http.NewRequestWithContext(ctx, method, meta.URL, rd)
	if err != nil {
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			httpDenied("bad URL: " + err.Error())
		}
		httpDenied("bad request: " + err.Error())
	}
	u := req.URL
	if err := h.checkURL(u); err != nil {
		httpDenied(err.Error())
	}
	if err := hc.count(); err != nil {
		httpDenied(err.Error())
	}
	for _, hs := range []map[string]string{meta.Header, meta.Headers} {
		for k, v := range hs {
			req.Header.Set(k, v)
		}
	}
	debug := h.log.Core().Enabled(zap.DebugLevel) // its fields only when logged
	var start time.Time
	if debug {
		start = time.Now()
	}
	resp, err := h.client.Do(req)
	if err != nil {
		h.log.Debug("plugin http request failed", zap.String("plugin", h.plugin), zap.String("method", method),
			zap.String("host", u.Host), zap.Error(err))
		httpDenied(fmt.Sprintf("%s %s: %v", method, u.Redacted(), unwrapURLError(err)))
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, h.grant.MaxResponseBytes+1))
	if err != nil {
		httpDenied(fmt.Sprintf("%s %s: reading the response: %v", method, u.Redacted(), unwrapURLError(err)))
	}
	if int64(len(data)) > h.grant.MaxResponseBytes {
		httpDenied(fmt.Sprintf("%s %s: the response body is over its limit of %d bytes (max_http_response_bytes)",
			method, u.Redacted(), h.grant.MaxResponseBytes))
	}
	if debug {
		h.log.Debug("plugin http request", zap.String("plugin", h.plugin), zap.String("method", method),
			zap.String("host", resp.Request.URL.Host), zap.Int("status", resp.StatusCode), zap.Int("bytes", len(data)),
			zap.Duration("took", time.Since(start)))
	}
	hc.status = int32(resp.StatusCode)
	hc.headers = headersJSON(resp.Header)
	if len(data) == 0 {
		s[0] = 0
		return
	}
	s[0] = c.k.WriteBlock(data, c.linear())
}

// unwrapURLError drops *url.Error's repetition of the method and URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// headersJSON is a response's headers as Extism gives them: a JSON object,
// names in lower case and sorted, a header's values joined with ", ".
// It writes the object by hand: encoding/json's reflection over a map
// took as long as the request itself on a local server (docs/design/plugins.md,
// "An HTTP request through the allow-list").
func headersJSON(h http.Header) []byte {
	if len(h) == 0 {
		return nil
	}
	keys := make([]string, 0, len(h))
	n := 2
	for k, vs := range h {
		keys = append(keys, k)
		n += len(k) + 6
		for _, v := range vs {
			n += len(v) + 2
		}
	}
	sort.Strings(keys)
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, strings.ToLower(k))
		b = append(b, ':')
		b = appendJSONString(b, strings.Join(h[k], ", "))
	}
	return append(b, '}')
}

// appendJSONString appends s to b as a JSON string, as encoding/json
// would (quotes, backslashes and control bytes escaped, bytes that are not
// UTF-8 as U+FFFD), but with <, > and & as they are.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// extismHTTPHeaders is http_headers() -> block: the last response's
// headers as a JSON object in a new block, 0 if none.
func extismHTTPHeaders(c extismCall, s []uint64) {
	if c.st.http.headers == nil {
		s[0] = 0
		return
	}
	s[0] = c.k.WriteBlock(c.st.http.headers, c.linear())
}
