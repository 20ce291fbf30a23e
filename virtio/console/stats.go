package console

import "sync/atomic"

// Stats is a snapshot of the console's counters.
type Stats struct {
	BytesOut uint64 // guest to host, written to out
	BytesIn  uint64 // host to guest, written into receive buffers
	Chains   uint64 // chains served, both queues
	// OutErrors counts transmit chains whose Write out refused (the
	// guest has been told they were sent: a console cannot push back).
	OutErrors uint64
}

// counters are written by the queue goroutines and read by Stats from any
// goroutine, hence atomic.
type counters struct {
	bytesOut, bytesIn, chains, outErrors atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		BytesOut: c.bytesOut.Load(), BytesIn: c.bytesIn.Load(),
		Chains: c.chains.Load(), OutErrors: c.outErrors.Load(),
	}
}
