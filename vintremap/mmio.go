// This file implements the register page (VT-d ch. 10): MMIO accesses, the
// global command register and the plain registers.

package vintremap

import "encoding/binary"

// ReadMMIO reads len(data) bytes at offset off of the register page. Aligned
// 4- and 8-byte accesses are served (a 64-bit register may be read whole or
// in halves, as Linux's readl/readq do); anything else, and any offset with
// no register, reads zeros.
func (u *Unit) ReadMMIO(off uint64, data []byte) {
	clear(data)
	n := uint64(len(data))
	if n != 4 && n != 8 || off%n != 0 || off >= Size {
		return
	}
	u.mu.Lock()
	lo := u.readDword(off)
	var hi uint32
	if n == 8 {
		hi = u.readDword(off + 4)
	}
	u.mu.Unlock()
	binary.LittleEndian.PutUint32(data, lo)
	if n == 8 {
		binary.LittleEndian.PutUint32(data[4:], hi)
	}
}

// WriteMMIO writes data at offset off of the register page. Aligned 4- and
// 8-byte writes count; an 8-byte write is its low dword then its high dword,
// which every register here tolerates (64-bit registers take effect on a
// command or on their low half). Other writes are ignored.
func (u *Unit) WriteMMIO(off uint64, data []byte) {
	n := uint64(len(data))
	if n != 4 && n != 8 || off%n != 0 || off >= Size {
		return
	}
	var p post
	u.mu.Lock()
	u.writeDword(off, binary.LittleEndian.Uint32(data), &p)
	if n == 8 {
		u.writeDword(off+4, binary.LittleEndian.Uint32(data[4:]), &p)
	}
	u.unlock(&p)
}

// readDword reads the aligned dword at off.
func (u *Unit) readDword(off uint64) uint32 {
	switch off {
	case RegVER:
		return Version
	case RegCAP, RegCAP + 4:
		return half(CAP, off-RegCAP)
	case RegECAP, RegECAP + 4:
		return half(u.ecap, off-RegECAP)
	case RegGSTS:
		return u.gsts
	case RegFSTS:
		return u.fstsValue()
	case RegFECTL:
		return u.fectl
	case RegFEDATA:
		return u.fedata
	case RegFEADDR:
		return u.feaddr
	case RegFEUADDR:
		return u.feuaddr
	case RegIQH:
		return u.iqh << 4
	case RegIQT:
		return u.iqt << 4
	case RegIQA, RegIQA + 4:
		return half(u.iqaReg, off-RegIQA)
	case RegICS:
		return u.ics
	case RegIECTL:
		return u.iectl
	case RegIEDATA:
		return u.iedata
	case RegIEADDR:
		return u.ieaddr
	case RegIEUADDR:
		return u.ieuaddr
	case RegIRTA, RegIRTA + 4:
		return half(u.irtaReg, off-RegIRTA)
	}
	if i, ok := frIndex(off); ok {
		r := u.fr[i]
		if off&8 == 0 {
			return half(r.lo, off&4)
		}
		return half(r.hi, off&4)
	}
	return 0
}

// writeDword writes the aligned dword at off.
func (u *Unit) writeDword(off uint64, v uint32, p *post) {
	switch off {
	case RegGCMD:
		u.command(v, p)
	case RegFSTS:
		u.writeFSTS(v, p)
	case RegFECTL:
		writeEventCtl(&u.fectl, v, u.feuaddr, u.feaddr, u.fedata, p)
	case RegFEDATA:
		u.fedata = v
	case RegFEADDR:
		u.feaddr = v &^ 3
	case RegFEUADDR:
		u.feuaddr = v
	case RegIQT:
		u.iqt = v >> 4 & 0x7FFF
		u.runQueue(p)
	case RegIQA, RegIQA + 4:
		u.iqaReg = setHalf(u.iqaReg, off-RegIQA, v) & (addrMask | iqaQS)
	case RegICS:
		if v&ICSIWC != 0 {
			u.ics &^= ICSIWC
			u.iectl &^= CtlIP // the pending completion went with IWC
		}
	case RegIECTL:
		writeEventCtl(&u.iectl, v, u.ieuaddr, u.ieaddr, u.iedata, p)
	case RegIEDATA:
		u.iedata = v
	case RegIEADDR:
		u.ieaddr = v &^ 3
	case RegIEUADDR:
		u.ieuaddr = v
	case RegIRTA, RegIRTA + 4:
		mask := addrMask | irtaS
		if u.ecap&ecapEIM != 0 {
			mask |= irtaEIME
		}
		u.irtaReg = setHalf(u.irtaReg, off-RegIRTA, v) & mask
	default:
		// Only F (bit 127) of a fault record is writable: write 1 to clear.
		if i, ok := frIndex(off); ok && off&0xF == 0xC && v&(1<<31) != 0 {
			u.fr[i].hi &^= frF
		}
	}
}

// command carries out a GCMD write. Like QEMU, each enable bit is compared
// with its status bit and acted on only when they differ, and the one-shot
// SIRTP acts whenever it is set: software writes its current enables plus
// the one bit it changes (Linux keeps them in iommu->gcmd). Every command
// completes at once, so the status bit software then polls is already there.
// TE, SRTP, SFL, WBF and EAFL are ignored: there is no DMA remapping.
func (u *Unit) command(v uint32, p *post) {
	changed := u.gsts ^ v
	if changed&gQIE != 0 {
		if v&gQIE != 0 {
			u.enableQueue(p)
		} else {
			u.gsts &^= gQIE
			u.iqh = 0 // IQH resets when QI is disabled
		}
	}
	if v&gSIRTP != 0 {
		// Latch the table. There is no entry cache to flush (ESIRTPS is
		// not advertised, so Linux follows with a global IEC flush anyway).
		u.irt = table{
			addr:    u.irtaReg & addrMask,
			entries: 2 << (u.irtaReg & irtaS),
			eime:    u.irtaReg&irtaEIME != 0,
		}
		u.gsts |= gSIRTP
	}
	if changed&gIRE != 0 {
		u.gsts ^= gIRE
	}
	if changed&gCFI != 0 {
		u.gsts ^= gCFI
	}
}

// half returns the low (off 0) or high (off 4) dword of v.
func half(v uint64, off uint64) uint32 { return uint32(v >> (8 * (off & 4))) }

// setHalf replaces the low (off 0) or high (off 4) dword of r.
func setHalf(r uint64, off uint64, v uint32) uint64 {
	s := 8 * (off & 4)
	return r&^(0xFFFFFFFF<<s) | uint64(v)<<s
}

// frIndex maps an offset to the fault-recording register it falls in.
func frIndex(off uint64) (int, bool) {
	if off < RegFR || off >= RegFR+16*NumFR {
		return 0, false
	}
	return int(off-RegFR) / 16, true
}

// writeEventCtl writes an event control register (FECTL, IECTL): only IM is
// writable, and unmasking an event left pending (IP) delivers it now.
func writeEventCtl(ctl *uint32, v, upper, addr, data uint32, p *post) {
	*ctl = *ctl&^CtlIM | v&CtlIM
	if *ctl&(CtlIM|CtlIP) == CtlIP {
		*ctl &^= CtlIP
		p.add(upper, addr, data)
	}
}
