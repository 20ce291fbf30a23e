// This file holds the dashboard's control endpoint: pause and resume the
// VM over HTTP, and snapshot it, for a user (or a script) stopping a guest
// at the moment an interrupt misbehaves. Unlike the read-only API, it changes the VM, so it
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
	// Snapshot saves the running VM (into the directory govmm's
	// --snapshot-dir armed) and lets it go on.
	Snapshot() (vmm.SnapshotInfo, error)
}

// controlReply is each control request's JSON answer.
type controlReply struct {
	OK       bool           `json:"ok"`
	State    string         `json:"state,omitempty"` // "paused" or "running"
	Snapshot *snapshotReply `json:"snapshot,omitempty"`
	Error    string         `json:"error,omitempty"`
}

// snapshotReply describes the snapshot a request took.
type snapshotReply struct {
	Dir      string  `json:"dir"`
	Bytes    int64   `json:"bytes"`     // the files' sizes, memory's holes included
	PausedMS float64 `json:"paused_ms"` // how long the guest was paused
}

// registerControl adds POST /api/v1/control/{pause,resume} when a
// controller and a token are set.
func (s *Server) registerControl(c Controller, token string) {
	if c == nil || token == "" {
		return
	}
	do := func(act func() (*controlReply, error), state string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if !authorized(r, token) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="govmm control"`)
				w.WriteHeader(http.StatusUnauthorized)
				json.NewEncoder(w).Encode(controlReply{Error: "the control endpoint needs Authorization: Bearer TOKEN (govmm's --control-token-file)"})
				return
			}
			reply, err := act()
			if err != nil {
				w.WriteHeader(http.StatusConflict)
				json.NewEncoder(w).Encode(controlReply{Error: err.Error()})
				return
			}
			reply.OK, reply.State = true, state
			json.NewEncoder(w).Encode(reply)
		}
	}
	plain := func(act func() error) func() (*controlReply, error) {
		return func() (*controlReply, error) { return &controlReply{}, act() }
	}
	s.mux.HandleFunc("POST /api/v1/control/pause", do(plain(c.Pause), "paused"))
	s.mux.HandleFunc("POST /api/v1/control/resume", do(plain(c.Resume), "running"))
	s.mux.HandleFunc("POST /api/v1/control/snapshot", do(func() (*controlReply, error) {
		info, err := c.Snapshot()
		if err != nil {
			return nil, err
		}
		return &controlReply{Snapshot: &snapshotReply{Dir: info.Dir, Bytes: info.Bytes,
			PausedMS: float64(info.Took.Microseconds()) / 1000}}, nil
	}, "running"))
}

// authorized checks r's bearer token against token in constant time.
func authorized(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// VMControl is the Controller of vm: the pause it starts is held until
// its resume; snapshot takes the snapshot the command armed (nil: none
// was, and a snapshot request is refused saying so).
func VMControl(vm *vmm.VM, snapshot func() (vmm.SnapshotInfo, error)) Controller {
	return &vmControl{vm: vm, snap: snapshot}
}

type vmControl struct {
	vm   *vmm.VM
	snap func() (vmm.SnapshotInfo, error)
	mu   sync.Mutex
	p    *vmm.Paused // the pause in progress; nil when running
}

// Snapshot refuses while the endpoint holds a pause: the snapshot pauses
// the VM itself, and then lets it go on.
func (c *vmControl) Snapshot() (vmm.SnapshotInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.snap == nil:
		return vmm.SnapshotInfo{}, errors.New("no snapshot directory: run govmm with --snapshot-dir DIR to snapshot on request")
	case c.p != nil:
		return vmm.SnapshotInfo{}, errors.New("the VM is paused by the control endpoint: resume it first (a snapshot pauses it itself)")
	}
	return c.snap()
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
