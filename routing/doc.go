// Package routing carries interrupts to the local APICs. It puts the LAPICs
// on the exit bus (RegisterLAPICs: each vCPU's xAPIC page and x2APIC MSRs,
// TSC_DEADLINE and APIC_BASE reach its own LAPIC), and the platform's
// device interrupts on the APIC bus (Platform: IOAPIC pins and MSIs,
// through the VT-d remapping unit once the guest enabled it).
//
// An IPI's path reads vcpu → exitbus → routing → vlapic → vcpu: the
// sender's exit is looked up on the bus, served here by its LAPIC's
// handler, and vlapic delivers it to the target's LAPIC, which notifies
// the target vCPU. A device interrupt's reads devices → routing (IOAPIC or
// MSI, remapping) → vlapic → vcpu.
//
// It is mechanism: measurement hears it through Observer (the platform's
// counters and a device MSI's trace) and through vlapic.Observer (the
// LAPICs'), and nothing here depends on what they do. Package vmm
// assembles it: it builds the Platform and adapts govmm's accounting to
// Observer.
package routing
