package dashboard

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/govmm/govmm/vmm"
)

type fakeControl struct {
	paused bool
	calls  int
	snaps  int
}

func (c *fakeControl) Snapshot() (vmm.SnapshotInfo, error) {
	c.calls++
	if c.snaps++; c.snaps > 1 {
		return vmm.SnapshotInfo{}, errors.New("a snapshot was taken already into /s")
	}
	return vmm.SnapshotInfo{Dir: "/s", Bytes: 1 << 20, Took: 1500 * time.Microsecond}, nil
}

func (c *fakeControl) Pause() error {
	c.calls++
	if c.paused {
		return errors.New("the VM is already paused")
	}
	c.paused = true
	return nil
}

func (c *fakeControl) Resume() error {
	c.calls++
	if !c.paused {
		return errors.New("the VM is not paused")
	}
	c.paused = false
	return nil
}

// TestControl: pause and resume act only with the token (none, a wrong
// one or a GET are refused, and the VM is not touched); a pause while
// paused is a conflict with the reason; without a token the endpoint does
// not exist.
func TestControl(t *testing.T) {
	c := &fakeControl{}
	s := newServer(newFake(1), Options{Control: c, ControlToken: "s3cret"})
	do := func(method, path, auth string) (int, string) {
		req := httptest.NewRequest(method, path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	for _, auth := range []string{"", "Bearer wrong", "s3cret", "Basic s3cret"} {
		if code, body := do("POST", "/api/v1/control/pause", auth); code != http.StatusUnauthorized || !strings.Contains(body, "Bearer") {
			t.Errorf("pause with %q: %d %s, want 401", auth, code, body)
		}
	}
	if c.calls != 0 {
		t.Fatalf("unauthorized requests reached the VM %d times", c.calls)
	}
	if code, _ := do("GET", "/api/v1/control/pause", "Bearer s3cret"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET pause: %d, want 405", code)
	}
	if code, body := do("POST", "/api/v1/control/pause", "Bearer s3cret"); code != http.StatusOK || !strings.Contains(body, `"state":"paused"`) || !c.paused {
		t.Errorf("pause: %d %s", code, body)
	}
	if code, body := do("POST", "/api/v1/control/pause", "Bearer s3cret"); code != http.StatusConflict || !strings.Contains(body, "already paused") {
		t.Errorf("second pause: %d %s, want 409 with the reason", code, body)
	}
	if code, body := do("POST", "/api/v1/control/resume", "Bearer s3cret"); code != http.StatusOK || !strings.Contains(body, `"state":"running"`) || c.paused {
		t.Errorf("resume: %d %s", code, body)
	}
	if code, body := do("POST", "/api/v1/control/snapshot", "Bearer wrong"); code != http.StatusUnauthorized || c.snaps != 0 {
		t.Errorf("snapshot with a wrong token: %d %s", code, body)
	}
	if code, body := do("POST", "/api/v1/control/snapshot", "Bearer s3cret"); code != http.StatusOK ||
		!strings.Contains(body, `"snapshot":{"dir":"/s","bytes":1048576,"paused_ms":1.5}`) || !strings.Contains(body, `"state":"running"`) {
		t.Errorf("snapshot: %d %s", code, body)
	}
	if code, body := do("POST", "/api/v1/control/snapshot", "Bearer s3cret"); code != http.StatusConflict || !strings.Contains(body, "taken already") {
		t.Errorf("second snapshot: %d %s, want 409 with the reason", code, body)
	}
	open := newServer(newFake(1), Options{Control: c})
	req := httptest.NewRequest("POST", "/api/v1/control/pause", nil)
	w := httptest.NewRecorder()
	open.Handler().ServeHTTP(w, req)
	if w.Code != http.StatusNotFound {
		t.Errorf("without a token the control endpoint answers %d, want 404", w.Code)
	}
}
