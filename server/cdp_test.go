package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
)

// cdpBrowser is headless Chromium driven through the DevTools protocol on
// a pipe (--remote-debugging-pipe: JSON messages, each ended by a NUL
// byte, written to its fd 3 and read from its fd 4): a page that clicks
// the dashboard's buttons as a person would, with the browser's own
// cookies, Origin and Sec-Fetch-Site headers.
type cdpBrowser struct {
	t       *testing.T
	cmd     *exec.Cmd
	w       *os.File
	mu      sync.Mutex
	next    int
	replies map[int]chan cdpReply
	done    chan struct{}
	session string
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// startCDP starts Chromium and opens one page on about:blank.
func startCDP(t *testing.T, b browser) *cdpBrowser {
	t.Helper()
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	cmd := exec.Command(b.path, b.args("--remote-debugging-pipe", "about:blank")...)
	cmd.ExtraFiles = []*os.File{inR, outW}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	_ = inR.Close()
	_ = outW.Close()
	c := &cdpBrowser{t: t, cmd: cmd, w: inW, replies: map[int]chan cdpReply{}, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		rd := bufio.NewReader(outR)
		for {
			msg, err := rd.ReadBytes(0)
			if err != nil {
				return
			}
			var m struct {
				ID int `json:"id"`
				cdpReply
			}
			if json.Unmarshal(msg[:len(msg)-1], &m) != nil || m.ID == 0 {
				continue // an event
			}
			c.mu.Lock()
			ch := c.replies[m.ID]
			delete(c.replies, m.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- m.cdpReply
			}
		}
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		<-c.done
		_ = outR.Close()
		if t.Failed() {
			t.Logf("chromium's stderr:\n%s", stderr.String())
		}
	})
	var target struct {
		TargetID string `json:"targetId"`
	}
	c.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var att struct {
		SessionID string `json:"sessionId"`
	}
	c.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att)
	c.session = att.SessionID
	return c
}

// send sends one command and waits for its reply.
func (c *cdpBrowser) send(session, method string, params any) (cdpReply, error) {
	c.mu.Lock()
	c.next++
	id := c.next
	ch := make(chan cdpReply, 1)
	c.replies[id] = ch
	c.mu.Unlock()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return cdpReply{}, err
	}
	if _, err := c.w.Write(append(b, 0)); err != nil {
		return cdpReply{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), browserBound)
	defer cancel()
	select {
	case r := <-ch:
		if r.Error != nil {
			return r, fmt.Errorf("%s: %s", method, r.Error.Message)
		}
		return r, nil
	case <-c.done:
		return cdpReply{}, fmt.Errorf("%s: chromium exited", method)
	case <-ctx.Done():
		return cdpReply{}, fmt.Errorf("%s: no reply from chromium", method)
	}
}

func (c *cdpBrowser) call(session, method string, params, out any) {
	c.t.Helper()
	r, err := c.send(session, method, params)
	require.NoError(c.t, err)
	if out != nil {
		require.NoError(c.t, json.Unmarshal(r.Result, out))
	}
}

// navigate loads url in the page.
func (c *cdpBrowser) navigate(url string) {
	c.t.Helper()
	c.call(c.session, "Page.navigate", map[string]any{"url": url}, nil)
}

// eval runs expr in the page (the DevTools' evaluation, which the page's
// CSP does not govern: the page itself runs no script) and returns its
// value as JSON; an error when the page is between two documents.
func (c *cdpBrowser) eval(expr string) (json.RawMessage, error) {
	r, err := c.send(c.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
	if err != nil {
		return nil, err
	}
	var v struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails any `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(r.Result, &v); err != nil {
		return nil, err
	}
	if v.ExceptionDetails != nil {
		return nil, fmt.Errorf("%s threw: %v", expr, v.ExceptionDetails)
	}
	return v.Result.Value, nil
}

// waitText waits until the page's visible text contains want, and
// returns the page's HTML.
func (c *cdpBrowser) waitText(what, want string) string {
	c.t.Helper()
	var html string
	testutil.WaitFor(c.t, what, func() bool {
		v, err := c.eval(`document.readyState === "complete" && document.body ? [document.body.innerText, document.documentElement.outerHTML] : null`)
		if err != nil || string(v) == "null" {
			return false
		}
		var pair []string
		if json.Unmarshal(v, &pair) != nil || len(pair) != 2 {
			return false
		}
		html = pair[1]
		return bytes.Contains([]byte(pair[0]), []byte(want))
	})
	return html
}

// click clicks the element of a CSS selector, as a person would.
func (c *cdpBrowser) click(selector string) {
	c.t.Helper()
	b, err := json.Marshal(selector)
	require.NoError(c.t, err)
	v, err := c.eval(fmt.Sprintf(`(() => { const e = document.querySelector(%s); if (!e) return false; e.click(); return true })()`, b))
	require.NoError(c.t, err)
	require.Equal(c.t, "true", string(v), "no element %s on the page", selector)
}

// setValue sets a form field's value.
func (c *cdpBrowser) setValue(selector, value string) {
	c.t.Helper()
	s, _ := json.Marshal(selector)
	v, _ := json.Marshal(value)
	r, err := c.eval(fmt.Sprintf(`(() => { const e = document.querySelector(%s); if (!e) return false; e.value = %s; return true })()`, s, v))
	require.NoError(c.t, err)
	require.Equal(c.t, "true", string(r), "no element %s on the page", selector)
}
