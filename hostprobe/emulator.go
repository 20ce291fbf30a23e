package hostprobe

import (
	"encoding/binary"
	"os"
	"strings"

	"github.com/govmm/govmm/internal/hostcpu"
)

// Emulator is the emulator this machine itself runs on, when it is the
// L1 of a nested host (package nested): its errata show in what govmm's
// guests see, and the tests assert what such a host really does.
type Emulator int

const (
	NoEmulator Emulator = iota // hardware, or a hypervisor running this machine's code natively
	QEMUTCG                    // QEMU's TCG (the nested AMD-V host)
	Bochs                      // Bochs (the nested VT-x host)
)

func (e Emulator) String() string {
	switch e {
	case QEMUTCG:
		return "QEMU TCG"
	case Bochs:
		return "Bochs"
	}
	return "none"
}

// DetectEmulator reads this machine's own CPUID and DMI: QEMU's TCG signs
// the hypervisor leaf 0x40000000 "TCGTCGTCGTCG" (QEMU with KVM signs it
// "KVMKVMKVM"); Bochs's BIOS names itself in the DMI tables.
func DetectEmulator() Emulator {
	_, b, c, d := hostcpu.CPUID(0x40000000, 0)
	var sig [12]byte
	binary.LittleEndian.PutUint32(sig[0:], b)
	binary.LittleEndian.PutUint32(sig[4:], c)
	binary.LittleEndian.PutUint32(sig[8:], d)
	if string(sig[:]) == "TCGTCGTCGTCG" {
		return QEMUTCG
	}
	for _, f := range []string{"/sys/devices/virtual/dmi/id/sys_vendor", "/sys/devices/virtual/dmi/id/bios_vendor"} {
		if v, err := os.ReadFile(f); err == nil && strings.Contains(strings.ToLower(string(v)), "bochs") {
			return Bochs
		}
	}
	return NoEmulator
}
