// This file holds Pause: every vCPU of a running VM parked at once (see
// vcpu.Park), the guest stopped with each vCPU's state saved, until the
// pause is ended. A snapshot saves the VM inside a pause; the dashboard's
// control endpoint will pause and resume with it.

package vmm

import (
	"errors"
	"fmt"
	"time"

	"github.com/govmm/govmm/vcpu"
)

// Paused is a VM whose vCPUs are all parked.
type Paused struct {
	parks []*vcpu.Parking
	// CPUs are the vCPUs' saved states, by index.
	CPUs []vcpu.Saved
}

// ErrPaused is Pause's answer when a pause is already in progress.
var ErrPaused = errors.New("the VM is already paused")

// Pause parks every vCPU and returns once all are parked, or with an error
// (and every vCPU released) if one could not park within timeout or its
// state could not be saved. The guest's devices keep their own threads:
// what they raise meanwhile waits in the LAPICs.
func (vm *VM) Pause(timeout time.Duration) (*Paused, error) {
	if !vm.pausing.CompareAndSwap(false, true) {
		return nil, ErrPaused
	}
	p := &Paused{CPUs: make([]vcpu.Saved, len(vm.cpus))}
	fail := func(err error) (*Paused, error) {
		p.release()
		vm.pausing.Store(false)
		return nil, err
	}
	for i, c := range vm.cpus {
		req, err := c.Park()
		if err != nil {
			return fail(fmt.Errorf("pausing vCPU %d: %w", i, err))
		}
		p.parks = append(p.parks, req)
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for i, req := range p.parks {
		select {
		case <-req.Parked():
		case <-deadline.C:
			return fail(fmt.Errorf("pausing: vCPU %d did not park within %v (state %v)", i, timeout, vm.cpus[i].State()))
		}
		if req.Err != nil {
			return fail(fmt.Errorf("pausing vCPU %d: %w", i, req.Err))
		}
		p.CPUs[i] = req.Saved
	}
	return p, nil
}

// Resume ends the pause p: every vCPU goes on where it was.
func (vm *VM) Resume(p *Paused) {
	p.release()
	vm.pausing.Store(false)
}

// release releases every parked (or parking) vCPU once.
func (p *Paused) release() {
	for _, req := range p.parks {
		req.Release()
	}
	p.parks = nil
}
