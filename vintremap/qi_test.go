package vintremap

import "testing"

func TestQueueInvalidations(t *testing.T) {
	r := newRig(t, Options{})
	r.enableQI()
	r.submit(
		[2]uint64{descIEC, 0},                         // global
		[2]uint64{descIEC | 1<<4 | 3<<27 | 40<<32, 0}, // 8 entries from 40
		[2]uint64{descContext | 1<<4, 0},              // context-cache, global
		[2]uint64{descIOTLB | 1<<4, 0},                // IOTLB, global
	)
	c := r.u.Snapshot().Counters
	if c.IECInvalidations != 2 || c.OtherInvalidations != 2 || c.WaitDescriptors != 1 {
		t.Fatalf("counters %+v", c)
	}
	// The ring wraps.
	for range 300 {
		r.submit([2]uint64{descIEC, 0})
	}
}

func TestWaitInterrupt(t *testing.T) {
	r := newRig(t, Options{})
	r.enableQI()
	r.w32(RegIEDATA, 0x33)
	r.w32(RegIEADDR, 0xFEE02000)
	r.w32(RegIECTL, 0)
	wait := [2]uint64{descWait | waitIF, 0}
	r.submit(wait)
	if got := r.irq.take(); len(got) != 1 || got[0] != (msi{0xFEE02000, 0x33}) {
		t.Fatalf("completion %+v", got)
	}
	if r.r32(RegICS) != ICSIWC || r.r32(RegIECTL) != 0 {
		t.Fatalf("ICS %#x IECTL %#x", r.r32(RegICS), r.r32(RegIECTL))
	}
	// IWC still set: no new event.
	r.submit(wait)
	if len(r.irq.take()) != 0 {
		t.Fatal("event with IWC set")
	}
	// Masked: IP latches until unmasked.
	r.w32(RegICS, ICSIWC)
	r.w32(RegIECTL, CtlIM)
	r.submit(wait)
	if len(r.irq.take()) != 0 || r.r32(RegIECTL) != CtlIM|CtlIP {
		t.Fatalf("masked IECTL %#x", r.r32(RegIECTL))
	}
	r.w32(RegIECTL, 0)
	if len(r.irq.take()) != 1 || r.r32(RegIECTL) != 0 {
		t.Fatal("unmask did not send the pending completion")
	}
	// Clearing IWC drops a masked, pending completion.
	r.w32(RegICS, ICSIWC)
	r.w32(RegIECTL, CtlIM)
	r.submit(wait)
	r.w32(RegICS, ICSIWC)
	r.w32(RegIECTL, 0)
	if r.r32(RegIECTL) != 0 || len(r.irq.take()) != 0 {
		t.Fatal("pending completion survived IWC clear")
	}
	if c := r.u.Snapshot().Counters; c.CompletionEvents != 3 {
		t.Fatalf("completion events %d", c.CompletionEvents)
	}
}

func TestQueueError(t *testing.T) {
	r := newRig(t, Options{})
	r.enableQI()
	r.w32(RegFEDATA, 0x4F)
	r.w32(RegFEADDR, 0xFEE00000)
	r.w32(RegFECTL, 0)
	r.submit([2]uint64{descIEC, 0}) // descriptors 0, 1
	// Descriptor 2 is bad (type 3: device-TLB, not supported); 3 waits.
	r.mem.put64(iqAddr+2*16, 0x3)
	r.mem.put64(iqAddr+3*16, descWait|waitSW|7<<32)
	r.mem.put64(iqAddr+3*16+8, statusAddr)
	r.mem.put64(statusAddr, 0)
	r.w32(RegIQT, 4<<4)
	if fsts := r.r32(RegFSTS); fsts != FSTSIQE {
		t.Fatalf("FSTS %#x, want IQE", fsts)
	}
	if h := r.r32(RegIQH); h != 2<<4 {
		t.Fatalf("IQH %#x, want the bad descriptor", h)
	}
	if got := r.irq.take(); len(got) != 1 {
		t.Fatalf("fault event %v", got)
	}
	if r.mem.get32(statusAddr) != 0 {
		t.Fatal("ran past the bad descriptor")
	}
	// More IQT writes do nothing while IQE is set.
	r.w32(RegIQT, 4<<4)
	if r.r32(RegIQH) != 2<<4 {
		t.Fatal("queue ran with IQE set")
	}
	// Linux's qi_check_fault: copy the wait descriptor over the bad one and
	// clear IQE; the queue resumes from IQH.
	r.mem.put64(iqAddr+2*16, descWait|waitSW|7<<32)
	r.mem.put64(iqAddr+2*16+8, statusAddr)
	r.w32(RegFSTS, FSTSIQE)
	if r.r32(RegFSTS) != 0 || r.r32(RegIQH) != 4<<4 || r.mem.get32(statusAddr) != 7 {
		t.Fatalf("after clearing IQE: FSTS %#x IQH %#x status %d", r.r32(RegFSTS), r.r32(RegIQH), r.mem.get32(statusAddr))
	}
}

func TestQueueErrorCases(t *testing.T) {
	cases := []struct {
		name   string
		q0, q1 uint64
		tail   uint32
	}{
		{"unknown type", 0xF, 0, 1},
		{"256-bit type", 0x200 | descIEC, 0, 1},
		{"IEC reserved", descIEC | 1<<5, 0, 1},
		{"IEC qword 1", descIEC, 1, 1},
		{"wait reserved", descWait | 1<<12, 0, 1},
		{"wait page drain", descWait | 1<<7, 0, 1},
		{"wait unaligned status", descWait | waitSW, statusAddr | 1, 1},
		{"wait status outside RAM", descWait | waitSW, 1 << 40, 1},
		{"tail beyond queue", descIEC, 0, 256},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, Options{})
			r.enableQI()
			r.mem.put64(iqAddr, c.q0)
			r.mem.put64(iqAddr+8, c.q1)
			r.w32(RegIQT, c.tail<<4)
			if r.r32(RegFSTS) != FSTSIQE || r.r32(RegIQH) != 0 {
				t.Fatalf("FSTS %#x IQH %#x", r.r32(RegFSTS), r.r32(RegIQH))
			}
		})
	}
	// A queue outside RAM.
	r := newRig(t, Options{})
	r.w64(RegIQA, 1<<40)
	r.command(gQIE, GSTSQIES, GSTSQIES)
	r.w32(RegIQT, 1<<4)
	if r.r32(RegFSTS) != FSTSIQE {
		t.Fatal("fetch error not reported")
	}
}

func TestQueueEnabledWithTail(t *testing.T) {
	// Windows writes descriptors and IQT before QIE; QEMU runs them then.
	r := newRig(t, Options{})
	r.mem.put64(iqAddr, descWait|waitSW|5<<32)
	r.mem.put64(iqAddr+8, statusAddr)
	r.w64(RegIQA, iqAddr|1) // 512 descriptors
	r.w32(RegIQT, 1<<4)
	r.command(gQIE, GSTSQIES, GSTSQIES)
	if r.mem.get32(statusAddr) != 5 || r.u.Snapshot().QueueSize != 512 {
		t.Fatal("queue not run at enable")
	}
}
