package acpi

// XSDT and RSDT (ACPI 6.x §5.2.8, §5.2.7): the root tables, arrays of 64-bit
// and 32-bit physical pointers to the other tables except the DSDT and FACS
// (the FADT points at those).

func xsdt(oemID string, tables []uint64) []byte {
	t := header("XSDT", 1, oemID)
	for _, a := range tables {
		t = le.AppendUint64(t, a)
	}
	return finish(t)
}

// rsdt requires every address to be below 4 GiB (Build checks).
func rsdt(oemID string, tables []uint64) []byte {
	t := header("RSDT", 1, oemID)
	for _, a := range tables {
		t = le.AppendUint32(t, uint32(a))
	}
	return finish(t)
}
