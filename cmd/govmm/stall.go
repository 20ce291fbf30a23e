package main

import (
	"fmt"
	"io"
	"time"

	"github.com/govmm/govmm/vcpu"
	"github.com/govmm/govmm/vmm"
)

// stallProbe is what the stall watch reads of a running VM.
type stallProbe struct {
	exits   func() uint64   // exits of all vCPUs so far
	inGuest func() int      // vCPUs in guest mode now
	dump    func(io.Writer) // every vCPU's state (vm.Dump)
	every   time.Duration   // how often to look
	// ticks, when not nil, replaces a ticker of every, and now the wall
	// clock the watch starts from (tests): each look is a tick, at the
	// tick's time, as a ticker's are.
	ticks <-chan time.Time
	now   func() time.Time
}

func vmStallProbe(vm *vmm.VM) stallProbe {
	return stallProbe{
		exits: func() uint64 {
			var n uint64
			for _, s := range vm.Accounting().Snapshot() {
				n += s.Total()
			}
			return n
		},
		inGuest: func() int {
			n := 0
			for _, c := range vm.VCPUs() {
				if c.State() == vcpu.StateGuest {
					n++
				}
			}
			return n
		},
		dump:  vm.Dump,
		every: time.Second,
	}
}

// watchStall dumps every vCPU to w, once, when no vCPU has exited for
// after while some are in guest mode. A guest stuck in its kernel with
// interrupts off makes no exits at all (the 64-vCPU periodic-tick livelock
// of guest/linux/patches/0005 was one), and without this govmm would wait
// for its timeout in silence. It returns when stop is closed.
func watchStall(p stallProbe, after time.Duration, w io.Writer, stop <-chan struct{}) {
	if after <= 0 {
		return
	}
	ticks, start := p.ticks, p.now
	if ticks == nil {
		t := time.NewTicker(p.every)
		defer t.Stop()
		ticks = t.C
	}
	if start == nil {
		start = time.Now
	}
	last, since := p.exits(), start()
	for {
		var now time.Time
		select {
		case <-stop:
			return
		case now = <-ticks:
		}
		if n := p.exits(); n != last {
			last, since = n, now
			continue
		}
		if now.Sub(since) < after {
			continue
		}
		g := p.inGuest()
		if g == 0 {
			since = now // all halted or waiting: an idle guest, not a stuck one
			continue
		}
		fmt.Fprintf(w, "govmm: no exit from any vCPU for %v with %d of them in guest mode: the guest looks stuck; its vCPUs now:\n",
			after, g)
		p.dump(w)
		return
	}
}
