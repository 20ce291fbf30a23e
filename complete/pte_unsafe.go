// This file holds the one unsafe use of package vcpu: an atomic OR on a
// page-table entry in guest RAM.

package complete

import (
	"sync/atomic"
	"unsafe"
)

// orPTE sets bits in the 8-byte page-table entry b (8-byte aligned in
// guest RAM) atomically: other vCPUs walk and edit the same tables.
func orPTE(b []byte, bits uint64) {
	atomic.OrUint64((*uint64)(unsafe.Pointer(&b[0])), bits)
}
