package pveoi

import "unsafe"

// wordAt is the guest's PV EOI word at b (4 bytes of guest RAM). The guest
// writes it concurrently: atomics only. The address is 4-byte aligned in a
// page-aligned mapping.
func wordAt(b []byte) *uint32 { return (*uint32)(unsafe.Pointer(&b[0])) }
