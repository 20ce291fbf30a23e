package kvm

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// SetReadOnlyMemoryRegion maps mem at gpa as a read-only slot
// (KVM_MEM_READONLY): guest reads are served from mem without an exit,
// guest writes exit as MMIO, or are queued in the coalesced ring where a
// zone covers them. Needs KVM_CAP_READONLY_MEM.
func (vm *VM) SetReadOnlyMemoryRegion(slot uint32, gpa uint64, mem []byte) error {
	r := UserspaceMemoryRegion{Slot: slot, Flags: MemReadOnly, GuestPhysAddr: gpa, MemorySize: uint64(len(mem)),
		UserspaceAddr: uint64(uintptr(unsafe.Pointer(&mem[0])))}
	if err := ioctlPtr(vm.fd, kvmSetUserMemoryRegion, &r); err != nil {
		return fmt.Errorf("KVM_SET_USER_MEMORY_REGION (read-only) slot %d: %w", slot, err)
	}
	return nil
}

// RegisterCoalescedMMIO makes KVM queue the guest's MMIO writes to
// [addr, addr+size) in the coalesced ring instead of exiting for each
// (KVM_REGISTER_COALESCED_MMIO). Needs KVM_CAP_COALESCED_MMIO.
func (vm *VM) RegisterCoalescedMMIO(addr uint64, size uint32) error {
	z := CoalescedZone{Addr: addr, Size: size}
	if err := ioctlPtr(vm.fd, kvmRegisterCoalesced, &z); err != nil {
		return fmt.Errorf("KVM_REGISTER_COALESCED_MMIO %#x+%#x: %w", addr, size, err)
	}
	return nil
}

// CoalescedRing is the VM's one ring of coalesced writes, a page KVM
// shares with every vCPU's mapping (at the page offset
// KVM_CAP_COALESCED_MMIO reports). KVM appends under its own lock and
// publishes last after the entry; user space consumes from first and
// publishes first after reading. Drain must not run on two threads at
// once (its caller's lock); it may run beside KVM filling the ring.
type CoalescedRing struct {
	head    *coalescedRingHead
	entries *[CoalescedRingEntries]CoalescedWrite
}

// CoalescedRing returns the ring in c's mapping, at page pageOffset (the
// value of KVM_CAP_COALESCED_MMIO); ok is false when the mapping does not
// reach it.
func (c *VCPU) CoalescedRing(pageOffset int) (r CoalescedRing, ok bool) {
	const page = 4096
	off := pageOffset * page
	if pageOffset < 1 || off+page > len(c.mem) {
		return r, false
	}
	return ringAt(c.mem[off : off+page]), true
}

// ringAt reads page as a ring.
func ringAt(page []byte) CoalescedRing {
	base := unsafe.Pointer(&page[0])
	return CoalescedRing{head: (*coalescedRingHead)(base),
		entries: (*[CoalescedRingEntries]CoalescedWrite)(unsafe.Add(base, unsafe.Sizeof(coalescedRingHead{})))}
}

// Drain hands every queued write to fn, oldest first, and frees its
// entry; it returns how many there were.
func (r CoalescedRing) Drain(fn func(w CoalescedWrite)) int {
	if r.head == nil {
		return 0
	}
	n := 0
	first := atomic.LoadUint32(&r.head.First)
	for last := atomic.LoadUint32(&r.head.Last); first != last && last < CoalescedRingEntries; last = atomic.LoadUint32(&r.head.Last) {
		for ; first != last; first = (first + 1) % CoalescedRingEntries {
			fn(r.entries[first])
			n++
		}
		atomic.StoreUint32(&r.head.First, first)
	}
	return n
}
