package vmm

import (
	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/routing"
	"github.com/govmm/govmm/vlapic"
)

// platformObserver is the platform's routing.Observer in govmm: its
// counters in the VM's accounting, and the trace a device MSI carries
// from the LAPICs' observer (an IPI kind of its own, DeviceMSI, so its
// latency is measured and the exits it costs its receiver are charged to
// device interrupts). The counters are atomics: any thread may call.
type platformObserver struct {
	acct *accounting.Platform
	obs  *accounting.Observer
}

var _ routing.Observer = platformObserver{}

func (o platformObserver) IOAPICFired()  { o.acct.IOAPICFired.Add(1) }
func (o platformObserver) IOAPICLost()   { o.acct.IOAPICLost.Add(1) }
func (o platformObserver) MSI()          { o.acct.MSIs.Add(1) }
func (o platformObserver) Remapped()     { o.acct.Remapped.Add(1) }
func (o platformObserver) Fault(r uint8) { o.acct.Fault(r) }

func (o platformObserver) Delivered(logical bool) {
	if logical {
		o.acct.DeviceLogical.Add(1)
	} else {
		o.acct.DevicePhysical.Add(1)
	}
}

func (o platformObserver) TraceDeviceMSI() vlapic.Trace { return o.obs.Trace(accounting.DeviceMSI) }
