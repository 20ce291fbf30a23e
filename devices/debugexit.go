package devices

// DebugExit is QEMU's isa-debug-exit: a write of code ends the VM with exit
// status (code << 1) | 1.
type DebugExit struct {
	Exit func(status int)
}

func (d *DebugExit) In(cpu int, port uint16, data []byte) { putLE(data, ^uint64(0)) }

func (d *DebugExit) Out(cpu int, port uint16, data []byte) {
	d.Exit(int(le(data))<<1 | 1)
}
