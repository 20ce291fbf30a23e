package acpi

// DMAR, the DMA Remapping Reporting table (Intel VT-d spec, ch. 8),
// revision 1, describing one remapping unit for the whole PCI segment 0.
//
// Layout: header; Host Address Width (stored as width-1); Flags (bit 0
// INTR_REMAP, bit 1 X2APIC_OPT_OUT); 10 reserved bytes; then one DRHD
// (type 0) with INCLUDE_PCI_ALL, segment 0, register base DMAR.RegBase, and a
// device scope entry of type 3 (IOAPIC) per I/O APIC: enumeration ID = the
// IOAPIC ID, start bus = SourceID>>8, path = one (device, function) pair.
// Linux enables interrupt remapping only if every IOAPIC appears in some
// DRHD's scope (intel_irq_remapping.c: ir_parse_ioapic_hpet_scope and
// "Not all IO-APIC's listed under remapping hardware").
//
// Left out: RMRR, ATSR, RHSA, ANDD and SATC structures, HPET scopes, PCI
// device scopes (INCLUDE_PCI_ALL covers them).

const (
	dmarIntrRemap    = 1 << 0
	dmarX2APICOptOut = 1 << 1

	drhdType          = 0
	drhdIncludePCIAll = 1 << 0
	scopeIOAPIC       = 3
)

func dmar(d *DMAR, ioapics []IOAPIC, oemID string) []byte {
	t := header("DMAR", 1, oemID)
	var flags uint8
	if d.IntrRemap {
		flags |= dmarIntrRemap
	}
	if d.X2APICOptOut {
		flags |= dmarX2APICOptOut
	}
	t = append(t, d.HostAddrWidth-1, flags)
	t = append(t, make([]byte, 10)...)

	drhdLen := 16 + 8*len(ioapics)
	t = le.AppendUint16(t, drhdType)
	t = le.AppendUint16(t, uint16(drhdLen))
	t = append(t, drhdIncludePCIAll, 0 /* size: 1 page */)
	t = le.AppendUint16(t, 0) // PCI segment
	t = le.AppendUint64(t, d.RegBase)
	for _, io := range ioapics {
		bus, dev, fn := uint8(io.SourceID>>8), uint8(io.SourceID>>3)&0x1F, uint8(io.SourceID)&7
		t = append(t, scopeIOAPIC, 8, 0 /* flags */, 0 /* reserved */, io.ID, bus, dev, fn)
	}
	return finish(t)
}
