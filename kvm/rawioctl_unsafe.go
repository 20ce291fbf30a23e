package kvm

import "unsafe"

// rawIoctl is one ioctl(2) without Go's entersyscall (rawioctl_amd64.s):
// the errno, 0 on success. Only for requests that never block in the
// kernel for long or whose caller lets Go's preemption signal end them
// (RunRaw). arg is kept a pointer, so the object it points at is live
// and in place until the kernel is done with it.
//
//go:noescape
func rawIoctl(fd, req uintptr, arg unsafe.Pointer) (errno uintptr)
