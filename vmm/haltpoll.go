package vmm

import (
	"fmt"
	"runtime"
	"time"

	"github.com/govmm/govmm/haltpoll"
)

// DefaultHaltPoll is govmm run's and boot's bound on halt polling: KVM's
// own default on x86 (KVM_HALT_POLL_NS_DEFAULT).
const DefaultHaltPoll = 200 * time.Microsecond

// hostCPUs is how many host CPUs govmm may run on (its affinity mask, as
// the Go runtime read it at start-up).
var hostCPUs = runtime.NumCPU

// haltPolling is the vCPUs' halt-polling policy for a VM of cpus vCPUs on
// host CPUs, bounded by max, and how the report says it. Polling never
// runs with more vCPUs than host CPUs: a thread spinning for a wake-up
// would then hold a CPU that a runnable vCPU's thread waits for, and the
// wake-up it spins for may need exactly that CPU.
func haltPolling(max time.Duration, cpus, host int) (haltpoll.Policy, string) {
	switch {
	case max <= 0:
		return haltpoll.Policy{}, "off"
	case cpus > host:
		return haltpoll.Policy{}, fmt.Sprintf("off: %d vCPUs, %d host CPUs", cpus, host)
	}
	return haltpoll.KVM.WithMax(max), fmt.Sprintf("up to %v per halt, adaptive (KVM's rule)", max)
}
