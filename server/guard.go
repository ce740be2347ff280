package server

import (
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Deadlines of a request, set per request (http.ResponseController) so
// that they follow its size: a small request gets little time, an upload
// the time it needs at minTransferRate.
const (
	// transferGrace is the time every request has for its body and its
	// response on top of what their sizes need.
	transferGrace = 10 * time.Second
	// minTransferRate is the slowest a client may send a body or read a
	// stored input or result, in bytes per second: 512 KiB/s, so a 64 MiB
	// upload may take 2 min 18 s.
	minTransferRate = 512 << 10
	// handlingTime is what the write deadline leaves for the handler itself
	// (the store may be busy) on top of reading the body.
	handlingTime = 60 * time.Second
	// retryAfter is the Retry-After of a 503 for a full budget, in seconds.
	retryAfter = "1"
)

// transferTime is how long n bytes may take at minTransferRate, plus the
// grace.
func transferTime(n int64) time.Duration {
	if n < 0 {
		n = 0
	}
	return transferGrace + time.Duration(n/minTransferRate)*time.Second
}

// LoopbackAddr reports whether a listen address (host:port) is on the
// loopback interface only: the host is "localhost" or an IP in 127.0.0.0/8
// or ::1. An empty host (":8080") listens on every interface, and a host
// name other than localhost may resolve anywhere: neither is loopback.
func LoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	return loopbackHost(host)
}

// loopbackHost reports whether host (no port) names the loopback
// interface: localhost (or "localhost."), 127.0.0.0/8, ::1 or an
// IPv4-mapped loopback address.
func loopbackHost(host string) bool {
	host = strings.TrimSuffix(host, ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// loopbackRemote reports whether a request's RemoteAddr (ip:port) is a
// loopback address: the request came from this machine.
func loopbackRemote(remote string) bool { return remoteAddr(remote).IsLoopback() }

// hostAllowed reports whether the Host of a request may reach a server
// listening on loopback without a token: a loopback name or IP, with any
// port (an SSH tunnel forwards from another one). A browser sends the host
// of the page's URL, so a page that rebinds its own name to 127.0.0.1 is
// refused. An empty Host (HTTP/1.0) comes from no browser.
func hostAllowed(hostport string) bool {
	if hostport == "" {
		return true
	}
	host := hostport
	if h, port, err := net.SplitHostPort(hostport); err == nil {
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return false
		}
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	return loopbackHost(host)
}

// budget counts the bytes that requests in flight hold, up to max. One
// acquisition bigger than max is granted only when nothing else is held,
// so that such a request is served alone rather than never.
type budget struct {
	mu   sync.Mutex
	max  int64
	used int64
}

// acquire takes n bytes, or reports false when they would go over the
// budget.
func (b *budget) acquire(n int64) bool {
	if n <= 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used > 0 && b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

// force takes n bytes whatever the budget holds (bytes already in memory
// that a request holds longer than it announced).
func (b *budget) force(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used += n
	b.mu.Unlock()
}

// release gives back n bytes.
func (b *budget) release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// inUse returns the bytes held now.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Errors of the guards, mapped to their statuses by statusOf.
var (
	// errUnsupportedMedia: a body of the wrong Content-Type (415).
	errUnsupportedMedia = errors.New("unsupported media type")
	// errBusy: the request budget or the concurrency limit is full (503).
	errBusy = errors.New("the server is busy")
)

// mediaType returns the media type of r's Content-Type, lowercase and
// without parameters; "" when there is none, and ok false when it does not
// parse or the header is repeated.
func mediaType(r *http.Request) (mt string, ok bool) {
	vs := r.Header.Values("Content-Type")
	switch len(vs) {
	case 0:
		return "", true
	case 1:
	default:
		return "", false
	}
	mt, _, err := mime.ParseMediaType(vs[0])
	if err != nil {
		return "", false
	}
	return mt, true
}

// checkMediaType refuses a body whose Content-Type is not one of types;
// with empty true, a request without Content-Type nor body is accepted too.
func checkMediaType(r *http.Request, types []string, empty bool) error {
	mt, ok := mediaType(r)
	if ok {
		if mt == "" && empty && r.ContentLength == 0 {
			return nil
		}
		for _, t := range types {
			if mt == t {
				return nil
			}
		}
	}
	got := r.Header.Get("Content-Type")
	if got == "" {
		got = "none"
	}
	return fmt.Errorf("%w: Content-Type %s; send %s (curl: -H 'Content-Type: %s')", errUnsupportedMedia,
		strconvQuote(got), strings.Join(types, " or "), types[0])
}

// strconvQuote quotes s for an error message, cut to 100 bytes.
func strconvQuote(s string) string {
	if len(s) > 100 {
		s = s[:100] + "..."
	}
	return strconv.Quote(s)
}

// bodyPolicy says what a route accepts as a body.
type bodyPolicy struct {
	// types are the accepted media types, the first the one to suggest.
	types []string
	// none: the route reads no body; a request without Content-Type and
	// body is accepted, and nothing is charged to the budget.
	none bool
}

var (
	jsonBody   = bodyPolicy{types: []string{"application/json"}}
	moduleBody = bodyPolicy{types: []string{"application/wasm", "application/octet-stream"}}
	noBody     = bodyPolicy{types: []string{"application/json"}, none: true}
)

// withBody wraps a state-changing handler: it refuses the wrong
// Content-Type (415) and a body announced over MaxModuleBytes (413) before
// reading anything, then takes the body's bytes from the budget (503 with
// Retry-After when it is full), caps the body at MaxModuleBytes while it is
// read, and gives the body the time its size needs at minTransferRate.
func (s *Server) withBody(p bodyPolicy, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := checkMediaType(r, p.types, p.none); err != nil {
			w.Header().Set("Accept-Post", strings.Join(p.types, ", "))
			s.writeError(w, r, err)
			return
		}
		if p.none {
			h(w, r)
			return
		}
		limit := s.cfg.MaxModuleBytes
		if r.ContentLength > limit {
			s.writeError(w, r, &http.MaxBytesError{Limit: limit})
			return
		}
		size := r.ContentLength
		if size < 0 { // chunked: it may be as big as the cap
			size = limit
		}
		if !s.inflight.acquire(size) {
			s.refuseBusy(w, r, fmt.Sprintf("%d bytes of request bodies and stored data are in flight, and this request's %d would go over http.max_inflight_bytes (%d)",
				s.inflight.inUse(), size, s.cfg.MaxInflightBytes))
			return
		}
		defer s.inflight.release(size)
		rc := http.NewResponseController(w)
		now := time.Now()
		_ = rc.SetReadDeadline(now.Add(transferTime(size)))
		_ = rc.SetWriteDeadline(now.Add(transferTime(size) + handlingTime))
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		h(w, r)
	}
}

// hold takes n bytes of stored data (a task's input and result, which the
// store reads whole) from the budget, and extends the write deadline to
// send n bytes. It reports false, having answered 503, when the budget is
// full; otherwise the caller gives the bytes back with
// s.inflight.release(n) when the request is over.
func (s *Server) hold(w http.ResponseWriter, r *http.Request, n int64) bool {
	if !s.inflight.acquire(n) {
		s.refuseBusy(w, r, fmt.Sprintf("%d bytes of request bodies and stored data are in flight, and this task's %d would go over http.max_inflight_bytes (%d)",
			s.inflight.inUse(), n, s.cfg.MaxInflightBytes))
		return false
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(transferTime(n) + handlingTime))
	return true
}

// refuseBusy answers 503 with Retry-After. It logs at debug level only:
// under load there would be one line per refusal; the refusals are counted
// in stint_http_requests_total{code="503"}.
func (s *Server) refuseBusy(w http.ResponseWriter, r *http.Request, why string) {
	if ce := s.log.Check(zap.DebugLevel, "request refused: busy"); ce != nil {
		ce.Write(zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.String("why", why))
	}
	w.Header().Set("Retry-After", retryAfter)
	writeJSON(w, http.StatusServiceUnavailable, errorResponse{Error: fmt.Sprintf("%v: %s; retry later", errBusy, why)})
}
