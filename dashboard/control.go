// This file holds the dashboard's control endpoint: pause and resume the
// VM over HTTP, for a user (or a script) stopping a guest at the moment an
// interrupt misbehaves. Unlike the read-only API, it changes the VM, so it
// exists only with a token (Options.ControlToken) and every request must
// carry it: "Authorization: Bearer TOKEN", compared in constant time.

package dashboard

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/govmm/govmm/vmm"
)

// Controller is what the control endpoint drives (vmm's VM, through an
// adapter that keeps the pause in progress).
type Controller interface {
	Pause() error
	Resume() error
}

// controlReply is each control request's JSON answer.
type controlReply struct {
	OK    bool   `json:"ok"`
	State string `json:"state,omitempty"` // "paused" or "running"
	Error string `json:"error,omitempty"`
}

// registerControl adds POST /api/v1/control/{pause,resume} when a
// controller and a token are set.
func (s *Server) registerControl(c Controller, token string) {
	if c == nil || token == "" {
		return
	}
	do := func(act func() error, state string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if !authorized(r, token) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="govmm control"`)
				w.WriteHeader(http.StatusUnauthorized)
				json.NewEncoder(w).Encode(controlReply{Error: "the control endpoint needs Authorization: Bearer TOKEN (govmm's --control-token-file)"})
				return
			}
			if err := act(); err != nil {
				w.WriteHeader(http.StatusConflict)
				json.NewEncoder(w).Encode(controlReply{Error: err.Error()})
				return
			}
			json.NewEncoder(w).Encode(controlReply{OK: true, State: state})
		}
	}
	s.mux.HandleFunc("POST /api/v1/control/pause", do(c.Pause, "paused"))
	s.mux.HandleFunc("POST /api/v1/control/resume", do(c.Resume, "running"))
}

// authorized checks r's bearer token against token in constant time.
func authorized(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// VMControl is the Controller of vm: the pause it starts is held until
// its resume.
func VMControl(vm *vmm.VM) Controller { return &vmControl{vm: vm} }

type vmControl struct {
	vm *vmm.VM
	mu sync.Mutex
	p  *vmm.Paused // the pause in progress; nil when running
}

// pauseTimeout bounds how long a pause waits for every vCPU to park.
const pauseTimeout = 10 * time.Second

func (c *vmControl) Pause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p != nil {
		return vmm.ErrPaused
	}
	p, err := c.vm.Pause(pauseTimeout)
	if err != nil {
		return err
	}
	c.p = p
	return nil
}

func (c *vmControl) Resume() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p == nil {
		return errors.New("the VM is not paused")
	}
	c.vm.Resume(c.p)
	c.p = nil
	return nil
}
