package server_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/server"
)

// clock is a settable time for the sessions' and the limit's tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// tokenServer is a dashboard with a token, on a clock of the test's.
func tokenServer(t *testing.T, cfg server.Config) (http.Handler, *clock) {
	t.Helper()
	st, _ := dashStore(t)
	cfg.Addr, cfg.Token = "0.0.0.0:8080", "s3cret-token"
	srv, err := server.New(cfg, server.Deps{Store: st})
	require.NoError(t, err)
	c := &clock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	server.SetClock(srv, c.now)
	return srv.Handler(), c
}

// signIn posts the sign-in form from remote (ip:port).
func signIn(t *testing.T, h http.Handler, remote, token string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"token": {token}, "next": {"/"}}.Encode()))
	req.Host = "localhost:8080"
	req.RemoteAddr = remote
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return doReq(h, req)
}

// TestSignInRateLimit: ten wrong tokens from one address, and the next
// sign-in from it gets 429 (Retry-After) even with the right token, while
// another address signs in; the bucket refills with time. ?token= counts
// as a sign-in too.
func TestSignInRateLimit(t *testing.T) {
	t.Parallel()
	h, clk := tokenServer(t, server.Config{})
	const attacker, other = "192.0.2.1:4000", "192.0.2.2:4000"
	for range 10 {
		wantPage(t, signIn(t, h, attacker, "guess"), http.StatusUnauthorized, `id="login-error"`)
	}
	rec := signIn(t, h, attacker, "s3cret-token")
	wantPage(t, rec, http.StatusTooManyRequests, `id="login-limited"`)
	require.NotEmpty(t, rec.Header().Get("Retry-After"))
	require.Empty(t, rec.Result().Cookies(), "no session while limited")
	req := httptest.NewRequest(http.MethodGet, "/?token=s3cret-token", nil)
	req.RemoteAddr = attacker
	require.Equal(t, http.StatusTooManyRequests, doReq(h, req).Code, "?token= is limited too")

	rec = signIn(t, h, other, "s3cret-token")
	require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())
	sessionOf(t, rec)

	clk.add(6 * time.Second) // one try back
	require.Equal(t, http.StatusUnauthorized, signIn(t, h, attacker, "guess").Code)
	require.Equal(t, http.StatusTooManyRequests, signIn(t, h, attacker, "s3cret-token").Code)
	clk.add(time.Minute) // the bucket full again
	require.Equal(t, http.StatusSeeOther, signIn(t, h, attacker, "s3cret-token").Code)
}

// TestSessionExpiry: a session ends after http.session_idle without a
// request, and http.session_max after its sign-in however busy; every
// page renews its cookie.
func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	h, clk := tokenServer(t, server.Config{SessionIdle: 10 * time.Minute, SessionMax: 30 * time.Minute})
	cookie := sessionOf(t, signIn(t, h, "192.0.2.1:4000", "s3cret-token"))
	first := cookie
	page := func(c *http.Cookie) *httptest.ResponseRecorder {
		return get(t, h, "/", "Cookie", c.Name+"="+c.Value)
	}
	for range 2 { // 9 minutes apart: each page renews the session
		clk.add(9 * time.Minute)
		rec := page(cookie)
		wantPage(t, rec, http.StatusOK)
		cookie = sessionOf(t, rec)
	}
	wantPage(t, page(first), http.StatusUnauthorized, `action="/login"`) // idle 18 minutes
	clk.add(9 * time.Minute)
	rec := page(cookie)
	wantPage(t, rec, http.StatusOK) // 27 minutes after its sign-in
	cookie = sessionOf(t, rec)
	require.LessOrEqual(t, cookie.MaxAge, 3*60, "the cookie lives no longer than the session")
	clk.add(3 * time.Minute)
	wantPage(t, page(cookie), http.StatusUnauthorized, `action="/login"`) // 30 minutes: over
}

// TestRevokeSessions: POST /v1/sessions/revoke (with the bearer token)
// ends every session; a new sign-in works.
func TestRevokeSessions(t *testing.T) {
	t.Parallel()
	h, _ := tokenServer(t, server.Config{})
	cookie := sessionOf(t, signIn(t, h, "192.0.2.1:4000", "s3cret-token"))
	wantPage(t, get(t, h, "/", "Cookie", cookie.Name+"="+cookie.Value), http.StatusOK)

	revoke := func(auth string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/v1/sessions/revoke", nil)
		req.Host = "localhost:8080"
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		return doReq(h, req)
	}
	require.Equal(t, http.StatusUnauthorized, revoke("").Code)
	require.Equal(t, http.StatusUnauthorized, revoke("Bearer "+cookie.Value).Code, "a session cannot revoke")
	wantPage(t, get(t, h, "/", "Cookie", cookie.Name+"="+cookie.Value), http.StatusOK)
	rec := revoke("Bearer s3cret-token")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.JSONEq(t, `{"revoked":true}`, rec.Body.String())
	wantPage(t, get(t, h, "/", "Cookie", cookie.Name+"="+cookie.Value), http.StatusUnauthorized, `action="/login"`)

	cookie = sessionOf(t, signIn(t, h, "192.0.2.1:4000", "s3cret-token"))
	wantPage(t, get(t, h, "/", "Cookie", cookie.Name+"="+cookie.Value), http.StatusOK)
}

// TestMetricsLoopbackOnly: with a token, /metrics answers a loopback
// address without it and another address only with it, unless
// MetricsPublic.
func TestMetricsLoopbackOnly(t *testing.T) {
	t.Parallel()
	metrics := func(h http.Handler, remote, auth string) int {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Host = "runner.example:8080"
		req.RemoteAddr = remote
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		return doReq(h, req).Code
	}
	h, _ := tokenServer(t, server.Config{})
	require.Equal(t, http.StatusUnauthorized, metrics(h, "192.0.2.1:4000", ""))
	require.Equal(t, http.StatusUnauthorized, metrics(h, "192.0.2.1:4000", "Bearer wrong"))
	require.Equal(t, http.StatusOK, metrics(h, "192.0.2.1:4000", "Bearer s3cret-token"))
	require.Equal(t, http.StatusOK, metrics(h, "127.0.0.1:4000", ""))
	require.Equal(t, http.StatusOK, metrics(h, "[::1]:4000", ""))
	require.Equal(t, http.StatusOK, metrics(h, "[::ffff:127.0.0.1]:4000", ""))

	public, _ := tokenServer(t, server.Config{MetricsPublic: true})
	require.Equal(t, http.StatusOK, metrics(public, "192.0.2.1:4000", ""))
}

// TestSignInPageShowsNothing: before sign-in the page shows neither the
// runner's state nor a sign-out button; after it, both.
func TestSignInPageShowsNothing(t *testing.T) {
	t.Parallel()
	h, _ := tokenServer(t, server.Config{})
	for _, path := range []string{"/", "/login", "/tasks"} {
		body := wantPage(t, get(t, h, path), map[bool]int{true: http.StatusOK, false: http.StatusUnauthorized}[path == "/login"], `action="/login"`)
		require.NotContains(t, body, "Sign out", path)
		require.NotContains(t, body, `id="runner-state"`, path)
		require.NotContains(t, body, "ready", path)
	}
	cookie := sessionOf(t, signIn(t, h, "192.0.2.1:4000", "s3cret-token"))
	wantPage(t, get(t, h, "/", "Cookie", cookie.Name+"="+cookie.Value), http.StatusOK, "Sign out", `id="runner-state"`)
}
