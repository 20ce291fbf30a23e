package blk

import "sync/atomic"

// QueueStats is a snapshot of one queue's counters.
type QueueStats struct {
	Reads, Writes, Flushes, GetIDs, Unsupported uint64 // requests by type
	BytesRead, BytesWritten                     uint64 // data moved for IN / OUT
	Errors                                      uint64 // requests answered IOERR
	DirectIOs, BufferedIOs                      uint64 // IN/OUT by descriptor used
}

// queueCounters are one queue's live counters: written by the queue's
// goroutine, read by Stats from any goroutine, hence atomic.
type queueCounters struct {
	reads, writes, flushes, getIDs, unsupported atomic.Uint64
	bytesRead, bytesWritten                     atomic.Uint64
	errors                                      atomic.Uint64
	directIOs, bufferedIOs                      atomic.Uint64
}

func (c *queueCounters) snapshot() QueueStats {
	return QueueStats{
		Reads: c.reads.Load(), Writes: c.writes.Load(), Flushes: c.flushes.Load(),
		GetIDs: c.getIDs.Load(), Unsupported: c.unsupported.Load(),
		BytesRead: c.bytesRead.Load(), BytesWritten: c.bytesWritten.Load(),
		Errors:    c.errors.Load(),
		DirectIOs: c.directIOs.Load(), BufferedIOs: c.bufferedIOs.Load(),
	}
}
