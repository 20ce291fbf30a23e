package kvm

// RDTSC reads the host's time-stamp counter. Guest TSC = host TSC + the
// per-vCPU offset KVM applies (no scaling is configured by govmm).
func RDTSC() uint64
