package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox"
)

// httpServer is a local test server: / answers "hello" with X-Test: yes,
// /echo the request's body and X-Plugin header, /big 1 MiB, /hang until
// the client goes, /to?u=URL redirects to URL.
func httpServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("X-Test", "yes")
		_, _ = io.WriteString(w, "hello")
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Test", r.Header.Get("X-Plugin"))
		_, _ = fmt.Fprintf(w, "%s:%s", r.Method, b)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write(make([]byte, 1<<20))
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		<-r.Context().Done()
	})
	mux.HandleFunc("/to", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, r.URL.Query().Get("u"), http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &hits
}

func httpPlugin(t *testing.T, g sandbox.HTTPGrant) *sandbox.Plugin {
	t.Helper()
	man := extismManifest()
	man.HTTP = g
	return loadExtismGreet(t, sandbox.InterruptChecks, man)
}

// HTTP from an Extism Go PDK plugin, deny by default: only to the hosts
// and addresses the manifest names, redirects re-checked, every request
// counted, bodies capped, a timeout inside the call's.
func TestExtismHTTP(t *testing.T) {
	t.Parallel()
	srv, hits := httpServer(t)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	port := u.Port()

	p := httpPlugin(t, sandbox.HTTPGrant{AllowedHosts: []string{"127.0.0.1"}, MaxRequests: 2, MaxResponseBytes: 1000, Timeout: 300 * time.Millisecond})
	out := call(t, p, "http", srv.URL+"/", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	require.Equal(t, "200 yes hello", string(out.Output))
	out = call(t, p, "http", "POST "+srv.URL+"/echo ping", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	require.Equal(t, "200 extism-greet POST:ping", string(out.Output))

	trapped := func(p *sandbox.Plugin, input, want string) {
		t.Helper()
		out := call(t, p, "http", input, sandbox.CallOptions{})
		require.Equal(t, sandbox.KindTrapped, out.Kind, out.String())
		require.Contains(t, out.Message, "extism:host/env.http_request: ")
		require.Contains(t, out.Message, want)
	}
	// A redirect to a host the list does not name.
	trapped(p, srv.URL+"/to?u="+url.QueryEscape("http://localhost:"+port+"/"), `denied: host "localhost" is not in allowed_hosts`)
	// Redirects count: the first request and its redirect use the budget of 2.
	trapped(p, srv.URL+"/to?u="+url.QueryEscape(srv.URL+"/to?u="+url.QueryEscape(srv.URL+"/")), "over the call's budget of 2 HTTP requests")
	trapped(p, srv.URL+"/big", "the response body is over its limit of 1000 bytes")
	trapped(p, srv.URL+"/hang", "context deadline exceeded")
	trapped(p, "file:///etc/passwd", `denied: scheme "file"`)
	out = call(t, p, "http", srv.URL+"/", sandbox.CallOptions{})
	require.Equal(t, "200 yes hello", string(out.Output), "each call has its own budget")

	// Loopback named by a name, not by its address: refused when dialled.
	before := hits.Load()
	byName := httpPlugin(t, sandbox.HTTPGrant{AllowedHosts: []string{"localhost", "*.example.com"}})
	trapped(byName, "http://localhost:"+port+"/", "denied: 127.0.0.1 is a loopback, private or link-local address; allowed_hosts must name it")
	trapped(byName, srv.URL+"/", `denied: host "127.0.0.1" is not in allowed_hosts`)
	require.Equal(t, before, hits.Load(), "no request reached the server")

	// No grant: no request.
	none := httpPlugin(t, sandbox.HTTPGrant{})
	trapped(none, srv.URL+"/", "denied: the plugin's manifest allows no hosts (allowed_hosts)")
	require.Equal(t, before, hits.Load())
}

// A bad allow-list is refused when the plugin loads.
func TestExtismHTTPGrantRefused(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	for _, h := range []string{"", "http://example.com", "example.com:0", "example.com:65536", "example.com:http", "127.0.0.1:080", "[a-", "a b"} {
		man := sandbox.Manifest{HTTP: sandbox.HTTPGrant{AllowedHosts: []string{h}}}
		_, err := rt.LoadPlugin(context.Background(), []byte("not read: the manifest is refused first"), man)
		require.ErrorIs(t, err, sandbox.ErrManifest, h)
		require.Contains(t, err.Error(), "allowed host", h)
	}
}

// The dial check refuses every non-public range unless the address is
// named.
func TestExtismHTTPPrivateRanges(t *testing.T) {
	t.Parallel()
	for _, ip := range []string{"10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "127.0.0.2", "::1", "fe80::1", "fd00::1", "0.0.0.0", "224.0.0.1"} {
		err := sandbox.CheckHTTPDial([]string{"*"}, net.JoinHostPort(ip, "80"))
		require.Error(t, err, ip)
		require.Contains(t, err.Error(), "loopback, private or link-local", ip)
		require.NoError(t, sandbox.CheckHTTPDial([]string{"*", ip}, net.JoinHostPort(ip, "80")), ip)
	}
	require.NoError(t, sandbox.CheckHTTPDial([]string{"*"}, "93.184.216.34:443"))
	for host, want := range map[string]bool{"a.example.com": true, "a.b.example.com": true, "example.com": false, "evil-example.com": false, "API.EXAMPLE.ORG": true, "api.example.org.evil": false} {
		require.Equal(t, want, sandbox.HTTPHostAllowed([]string{"*.example.com", "api.example.org"}, host), host)
	}
	require.False(t, sandbox.HTTPHostAllowed(nil, "example.com"))
}

// TestExtismHTTPSpecialPurposeRanges: a grant of "*" reaches no address
// of any range of IANA's IPv4 and IPv6 Special-Purpose Address Registries
// (first and last address of each), nor an IPv4 one's IPv4-mapped,
// IPv4-compatible, NAT64 or 6to4 form, unless allowed_hosts names the
// address itself; public addresses, mapped or not, are reached.
func TestExtismHTTPSpecialPurposeRanges(t *testing.T) {
	t.Parallel()
	ranges := []string{
		// iana-ipv4-special-registry, and multicast
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.0.0/29", "192.0.0.8/32", "192.0.0.9/32", "192.0.0.10/32", "192.0.0.170/31",
		"192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24", "192.88.99.0/24", "192.168.0.0/16",
		"192.175.48.0/24", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4",
		"255.255.255.255/32", "224.0.0.0/4",
		// iana-ipv6-special-registry, and multicast, site-local, IPv4-compatible
		"::1/128", "::/128", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "100:0:0:1::/64",
		"2001::/23", "2001::/32", "2001:1::1/128", "2001:1::2/128", "2001:1::3/128", "2001:2::/48",
		"2001:3::/32", "2001:4:112::/48", "2001:10::/28", "2001:20::/28", "2001:30::/28", "2001:db8::/32",
		"2002::/16", "2620:4f:8000::/48", "3fff::/20", "5f00::/16", "fc00::/7", "fe80::/10",
		"ff00::/8", "fec0::/10", "::/96",
	}
	refused := func(ip netip.Addr) {
		t.Helper()
		addr := netip.AddrPortFrom(ip, 443).String()
		err := sandbox.CheckHTTPDial([]string{"*"}, addr)
		require.Error(t, err, addr)
		require.Contains(t, err.Error(), "allowed_hosts must name it", addr)
		require.NoError(t, sandbox.CheckHTTPDial([]string{"*", ip.String()}, addr), "named: %s", addr)
	}
	for _, r := range ranges {
		p := netip.MustParsePrefix(r)
		first := p.Masked().Addr()
		b := first.AsSlice()
		for i := p.Bits(); i < len(b)*8; i++ {
			b[i/8] |= 0x80 >> (i % 8)
		}
		last, _ := netip.AddrFromSlice(b)
		for _, ip := range []netip.Addr{first, last} {
			refused(ip)
			if ip.Is4() {
				v4 := ip.As4()
				mapped := netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: v4[0], 13: v4[1], 14: v4[2], 15: v4[3]})
				compat := netip.AddrFrom16([16]byte{12: v4[0], 13: v4[1], 14: v4[2], 15: v4[3]})
				nat64 := netip.AddrFrom16([16]byte{0: 0, 1: 0x64, 2: 0xff, 3: 0x9b, 12: v4[0], 13: v4[1], 14: v4[2], 15: v4[3]})
				sixToFour := netip.AddrFrom16([16]byte{0: 0x20, 1: 0x02, 2: v4[0], 3: v4[1], 4: v4[2], 5: v4[3], 15: 1})
				for _, form := range []netip.Addr{mapped, compat, nat64, sixToFour} {
					refused(form)
				}
			}
		}
	}
	for _, ip := range []string{"93.184.216.34", "::ffff:93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "1.1.1.1", "100.63.255.255", "100.128.0.0", "198.17.255.255", "198.20.0.0", "223.255.255.255"} {
		addr := netip.AddrPortFrom(netip.MustParseAddr(ip), 443).String()
		require.NoError(t, sandbox.CheckHTTPDial([]string{"*"}, addr), addr)
	}

	// Named with a port: that port only, in every spelling.
	for _, named := range []string{"127.0.0.1:8080", "[::1]:8080", "[::ffff:127.0.0.1]:8080"} {
		host, _, err := net.SplitHostPort(named)
		require.NoError(t, err)
		ip := netip.MustParseAddr(host)
		require.NoError(t, sandbox.CheckHTTPDial([]string{"*", named}, netip.AddrPortFrom(ip, 8080).String()), named)
		err = sandbox.CheckHTTPDial([]string{"*", named}, netip.AddrPortFrom(ip, 22).String())
		require.ErrorContains(t, err, "with other ports than 22", named)
		require.True(t, sandbox.HTTPHostPortAllowed([]string{named}, host, 8080), named)
		require.False(t, sandbox.HTTPHostPortAllowed([]string{named}, host, 22), named)
	}
	require.True(t, sandbox.HTTPHostPortAllowed([]string{"api.example.com:8443"}, "API.example.com", 8443))
	require.False(t, sandbox.HTTPHostPortAllowed([]string{"api.example.com:8443"}, "api.example.com", 443))
	require.True(t, sandbox.HTTPHostPortAllowed([]string{"127.0.0.1"}, "127.0.0.1", 22), "no port named: every port")
}

// http_headers' JSON, written by hand, decodes to what encoding/json gives
// for the same headers: lower-case names, values joined, every byte a
// header may hold escaped or replaced.
func TestExtismHTTPHeadersJSON(t *testing.T) {
	t.Parallel()
	require.Nil(t, sandbox.HeadersJSON(nil))
	h := http.Header{
		"X-Test":       {"yes"},
		"Set-Cookie":   {"a=1", "b=2"},
		"X-Quote":      {`say "hi" \ back`},
		"X-Ctl":        {"a\tb\nc\rd\x00e\x1f"},
		"X-Bad-Utf8":   {"a\xffb\xc3"},
		"X-Unicode":    {"héllo 世界 \u2028\u2029 <a>&"},
		"X-Empty":      {""},
		"Content-Type": {"text/plain; charset=utf-8"},
	}
	want := map[string]string{}
	for k, vs := range h {
		want[strings.ToLower(k)] = strings.Join(vs, ", ")
	}
	wantJSON, err := json.Marshal(want)
	require.NoError(t, err)
	got := sandbox.HeadersJSON(h)
	require.True(t, json.Valid(got), string(got))
	var gotMap, wantMap map[string]string
	require.NoError(t, json.Unmarshal(got, &gotMap))
	require.NoError(t, json.Unmarshal(wantJSON, &wantMap))
	require.Equal(t, wantMap, gotMap)
	require.Contains(t, string(got), `"x-bad-utf8":"a\ufffdb\ufffd"`)
}

// minimalHTTPPlugin loads plugin_http.wat (one GET through http_request,
// no language runtime) under g.
func minimalHTTPPlugin(t *testing.T, g sandbox.HTTPGrant) *sandbox.Plugin {
	t.Helper()
	rt := newRuntime(t, sandbox.Config{})
	return loadPlugin(t, rt, "plugin_http", sandbox.Manifest{Name: "plugin-http",
		HostModules: []string{sandbox.ExtismModule}, HTTP: g, Limits: sandbox.PluginLimits{Timeout: 30 * time.Second}})
}

// The minimal HTTP plugin (plugin_http.wat, BenchmarkExtismHTTP's row a')
// makes its GET through the allow-list: the request JSON it builds reaches
// the server whole for URLs of every length (random paths), and without a
// grant, or with a grant that names loopback only by a name, the request
// is refused and never reaches the server.
func TestExtismHTTPMinimalGuest(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("X-Test", "yes")
		_, _ = fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.RequestURI(), r.Header.Get("X-Plugin"))
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)

	p := minimalHTTPPlugin(t, sandbox.HTTPGrant{AllowedHosts: []string{"127.0.0.1"}})
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 26))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~"
	for i := range 40 {
		path := make([]byte, 1+i%17+rng.IntN(64)) // every length mod 8, and longer ones
		path[0] = '/'
		for j := 1; j < len(path); j++ {
			path[j] = alphabet[rng.IntN(len(alphabet))]
		}
		out := call(t, p, "get", srv.URL+string(path), sandbox.CallOptions{})
		require.Equal(t, sandbox.KindSucceeded, out.Kind, "seed %d: %s", seed, out)
		require.Equal(t, "GET "+string(path)+" extism-greet", string(out.Output), "seed %d", seed)
	}
	out := call(t, p, "get", srv.URL+"/missing", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindFailed, out.Kind, out.String())
	require.EqualValues(t, http.StatusNotFound, out.ExitCode, "the status, returned")

	refused := func(p *sandbox.Plugin, input, want string) {
		t.Helper()
		before := hits.Load()
		out := call(t, p, "get", input, sandbox.CallOptions{})
		require.Equal(t, sandbox.KindTrapped, out.Kind, out.String())
		require.Contains(t, out.Message, "extism:host/env.http_request: ")
		require.Contains(t, out.Message, want)
		require.Equal(t, before, hits.Load(), "no request reached the server")
	}
	refused(minimalHTTPPlugin(t, sandbox.HTTPGrant{}), srv.URL+"/", "denied: the plugin's manifest allows no hosts (allowed_hosts)")
	byName := minimalHTTPPlugin(t, sandbox.HTTPGrant{AllowedHosts: []string{"localhost"}})
	refused(byName, "http://localhost:"+u.Port()+"/", "denied: 127.0.0.1 is a loopback, private or link-local address")
	refused(byName, srv.URL+"/", `denied: host "127.0.0.1" is not in allowed_hosts`)
	refused(p, "http://localhost:"+u.Port()+"/", `denied: host "localhost" is not in allowed_hosts`)
	refused(p, "http://[::1/", "bad URL: ")
	refused(p, "ftp://127.0.0.1/", `denied: scheme "ftp"`)

	// An address named with a port grants that port only, at the URL's
	// check and at the dial's (where "*" passes the URL).
	port, err := strconv.Atoi(u.Port())
	require.NoError(t, err)
	other := strconv.Itoa(port%65535 + 1)
	onPort := minimalHTTPPlugin(t, sandbox.HTTPGrant{AllowedHosts: []string{"127.0.0.1:" + u.Port()}})
	out = call(t, onPort, "get", srv.URL+"/p", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	refused(minimalHTTPPlugin(t, sandbox.HTTPGrant{AllowedHosts: []string{"127.0.0.1:" + other}}), srv.URL+"/",
		`denied: host "127.0.0.1" is not in allowed_hosts (on port `+u.Port()+")")
	refused(minimalHTTPPlugin(t, sandbox.HTTPGrant{AllowedHosts: []string{"*", "127.0.0.1:" + other}}), srv.URL+"/",
		"denied: 127.0.0.1 is named in allowed_hosts with other ports than "+u.Port())
}

// A request ends with the call: when the call's deadline comes before the
// request's own timeout (here 10 s, the default), the call's context is
// the request's, and a request that hangs ends at the call's deadline.
func TestExtismHTTPEndsWithTheCall(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-r.Context().Done() // hangs until the client goes
	}))
	t.Cleanup(srv.Close)
	rt := newRuntime(t, sandbox.Config{})
	p := loadPlugin(t, rt, "plugin_http", sandbox.Manifest{Name: "plugin-http",
		HostModules: []string{sandbox.ExtismModule}, HTTP: sandbox.HTTPGrant{AllowedHosts: []string{"127.0.0.1"}},
		Limits: sandbox.PluginLimits{Timeout: 300 * time.Millisecond}})
	start := time.Now()
	out := call(t, p, "get", srv.URL+"/", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindTimedOut, out.Kind, out.String())
	require.Less(t, time.Since(start), sandbox.DefaultHTTPTimeout, "the call's deadline ended the request")
	<-arrived

	// The caller's context ends the request too.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-arrived
		cancel()
	}()
	out = callCtx(t, ctx, p, "get", srv.URL+"/", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindForced, out.Kind, out.String())
}
