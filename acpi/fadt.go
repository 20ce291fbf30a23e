package acpi

// FADT, the Fixed ACPI Description Table, signature "FACP" (ACPI 6.x §5.2.9),
// revision 6, minor 0: 276 bytes.
//
// Choices:
//   - Not hardware-reduced: Linux powers off through \_S5 by writing SLP_TYP
//     and SLP_EN to PM1a_CNT, which needs the PM1 blocks and the SCI.
//   - SMI_CMD = 0: the platform is always in ACPI mode (ACPICA then never
//     tries the ACPI_ENABLE handshake); ACPI_ENABLE/ACPI_DISABLE are 0.
//   - PM1a event block: 4 bytes (PM1_STS at +0, PM1_EN at +2); PM1a control
//     block: 2 bytes. Both as 32-bit fields and as X_ generic addresses
//     (System I/O, same port, bit width 8*length) so ACPICA sees no mismatch.
//     No PM1b, PM2, GPE0/GPE1 blocks.
//   - PM timer at PM.PMTimer (PM_TMR_BLK, length 4, X_PM_TMR_BLK), 32 bits
//     wide (TMR_VAL_EXT): Linux checks its LAPIC timer calibration against
//     it when the timer is not TSC-deadline; 0 announces none.
//   - Flags: WBINVD (required), PROC_C1 (HLT works on every CPU), SLP_BUTTON
//     (no sleep button), RESET_REG_SUP. PWR_BUTTON is clear: a fixed-feature
//     power button exists, so the PM device can request a clean shutdown by
//     setting PM1_STS.PWRBTN_STS (bit 8) and raising the SCI when
//     PM1_EN.PWRBTN_EN is set. HW_REDUCED_ACPI, FORCE_APIC_CLUSTER_MODEL and
//     FORCE_APIC_PHYSICAL_DESTINATION_MODE are clear: the APIC mode stays
//     Linux's choice.
//   - IA-PC boot architecture: LEGACY_DEVICES (the 16550 is an ISA-style
//     device), VGA Not Present, CMOS RTC Not Present (govmm has no RTC at
//     0x70: Linux then registers no rtc_cmos); 8042 clear, which tells Linux
//     (FADT revision >= 3) there is no i8042 to probe. MSI is supported.
//   - Reset register: System I/O, 8 bits, byte access, at PM.ResetPort,
//     value PM.ResetValue.
//   - FACS and DSDT: FIRMWARE_CTRL and DSDT hold the address when it is below
//     4 GiB; X_DSDT always holds it; X_FIRMWARE_CTRL only when above 4 GiB
//     (the spec wants one of the two FACS fields zero).
//   - Preferred PM profile 0 (unspecified); hypervisor vendor identity 0.

const fadtLen = 276

const (
	fadtWBINVD      = 1 << 0
	fadtProcC1      = 1 << 2
	fadtSlpButton   = 1 << 5
	fadtResetRegSup = 1 << 10
	fadtTmrValExt   = 1 << 8

	bootLegacyDevices = 1 << 0
	bootNoVGA         = 1 << 2
	bootNoCMOSRTC     = 1 << 5

	pm1EvtLen = 4
	pm1CntLen = 2
	pmTmrLen  = 4
)

func fadt(pm PM, oemID string, facsAddr, dsdtAddr uint64) []byte {
	t := header("FACP", 6, oemID)
	t = append(t, make([]byte, fadtLen-headerLen)...)
	if facsAddr < 1<<32 {
		le.PutUint32(t[36:], uint32(facsAddr))
	} else {
		le.PutUint64(t[132:], facsAddr)
	}
	if dsdtAddr < 1<<32 {
		le.PutUint32(t[40:], uint32(dsdtAddr))
	}
	le.PutUint16(t[46:], uint16(pm.SCI))
	le.PutUint32(t[56:], uint32(pm.PM1aEvt))
	le.PutUint32(t[64:], uint32(pm.PM1aCnt))
	t[88] = pm1EvtLen
	t[89] = pm1CntLen
	flags := uint32(fadtWBINVD | fadtProcC1 | fadtSlpButton | fadtResetRegSup)
	if pm.PMTimer != 0 {
		le.PutUint32(t[76:], uint32(pm.PMTimer))
		t[91] = pmTmrLen
		putGAS(t[208:], spaceSystemIO, 8*pmTmrLen, 0, accessAny, uint64(pm.PMTimer))
		flags |= fadtTmrValExt
	}
	le.PutUint16(t[109:], bootLegacyDevices|bootNoVGA|bootNoCMOSRTC)
	le.PutUint32(t[112:], flags)
	putGAS(t[116:], spaceSystemIO, 8, 0, accessByte, uint64(pm.ResetPort))
	t[128] = pm.ResetValue
	t[131] = 0 // FADT minor version
	le.PutUint64(t[140:], dsdtAddr)
	putGAS(t[148:], spaceSystemIO, 8*pm1EvtLen, 0, accessAny, uint64(pm.PM1aEvt))
	putGAS(t[172:], spaceSystemIO, 8*pm1CntLen, 0, accessAny, uint64(pm.PM1aCnt))
	return finish(t)
}
