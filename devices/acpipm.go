package devices

import "sync"

// ACPIPM is the fixed-hardware ACPI PM1a register block the FADT announces:
// PM1_STS/PM1_EN (4 bytes at the event port) and PM1_CNT (2 bytes at the
// control port), plus the FADT reset register. A write of SLP_EN with
// SLP_TYP = 5 (the DSDT's \_S5) powers the VM off; the reset value at the
// reset port reboots it, which govmm reports as the guest's end. Left out:
// other sleep states, the power-button event and the SCI.
type ACPIPM struct {
	EvtPort, CntPort, ResetPort uint16
	ResetValue                  uint8
	PowerOff, Reset             func()

	mu      sync.Mutex
	sts, en uint16
	cnt     uint16
}

const (
	pm1CntSCIEn  = 1 << 0
	pm1CntSlpEn  = 1 << 13
	pm1SlpTypS5  = 5
	pm1SlpTypOff = 10
)

func (p *ACPIPM) In(cpu int, port uint16, data []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var v uint64
	switch {
	case port >= p.EvtPort && port < p.EvtPort+4:
		v = (uint64(p.sts) | uint64(p.en)<<16) >> (8 * (port - p.EvtPort))
	case port >= p.CntPort && port < p.CntPort+2:
		// SCI_EN reads as set: the machine is always in ACPI mode (FADT SMI_CMD = 0).
		v = uint64(p.cnt|pm1CntSCIEn) >> (8 * (port - p.CntPort))
	}
	putLE(data, v)
}

func (p *ACPIPM) Out(cpu int, port uint16, data []byte) {
	v := le(data)
	p.mu.Lock()
	var act func()
	switch {
	case port == p.EvtPort && len(data) >= 2:
		p.sts &^= uint16(v) // write 1 to clear
		if len(data) == 4 {
			p.en = uint16(v >> 16)
		}
	case port == p.EvtPort+2:
		p.en = uint16(v)
	case port == p.CntPort:
		p.cnt = uint16(v) &^ pm1CntSlpEn // SLP_EN is write-only
		if v&pm1CntSlpEn != 0 && (v>>pm1SlpTypOff)&7 == pm1SlpTypS5 {
			act = p.PowerOff
		}
	case port == p.ResetPort && uint8(v) == p.ResetValue:
		act = p.Reset
	}
	p.mu.Unlock()
	if act != nil {
		act()
	}
}
