package linuxguest

import (
	"regexp"
	"strconv"
)

// State is what a Linux guest's own log says about its interrupt
// setup. govmm never assumes a mode: it reads it here.
type State struct {
	APICMode   string // "flat", "physflat", "physical x2apic", "cluster x2apic", "mixed", or "" if not seen
	X2APIC     bool   // the kernel switched the LAPICs to x2APIC
	IRQRemap   string // "x2apic", "xapic" or "" (off)
	CPUsUp     int    // from "smp: Brought up N nodes, M CPUs"
	InitRun    bool   // "Run /init as init process"
	PVIPI      bool   // govmm's kernel switched its IPIs to govmm's PV trap
	KVMPVIPI   bool   // the kernel switched its IPIs to KVM's PV send-IPI hypercall
	Panic      string // the first "Kernel panic" line, if any
	KernelLine string // "Linux version ..."
}

var (
	// "Switched" when the driver changes after boot-time probing;
	// "Setting" when firmware handed the CPUs over in x2APIC mode and the
	// MADT picked the driver (Linux 6.1 with 288 CPUs and x2apic_phys).
	reRouting   = regexp.MustCompile(`(?:Switched|Setting) APIC routing to:? ?(physical flat|cluster x2apic|physical x2apic|mixed x2apic|flat|x2apic cluster|x2apic physical)`)
	reMixed     = regexp.MustCompile(`govmm: APIC mode mixed`)
	reX2APIC    = regexp.MustCompile(`x2apic enabled|x2apic: enabled|Enabling x2apic`)
	reIRQRemap  = regexp.MustCompile(`Enabled IRQ remapping in (x2apic|xapic) mode`)
	reSMP       = regexp.MustCompile(`smp: Brought up \d+ nodes?, (\d+) CPUs?`)
	reInit      = regexp.MustCompile(`Run /init as init process`)
	rePVIPI     = regexp.MustCompile(`govmm: PV send-IPI enabled`)
	reKVMPVIPI  = regexp.MustCompile(`kvm-guest: setup PV IPIs`) // kvm_setup_pv_ipi, arch/x86/kernel/kvm.c
	rePanic     = regexp.MustCompile(`Kernel panic - not syncing: .*`)
	reLinux     = regexp.MustCompile(`Linux version \S+`)
	reFlatUnset = regexp.MustCompile(`APIC: Switch to symmetric I/O mode setup`)
)

// ParseLog reads a kernel log.
func ParseLog(log string) State {
	var s State
	// The last routing line is the driver in effect: with the CPUs
	// handed over in x2APIC mode, Linux picks one by the MADT ("Setting
	// APIC routing to") and then probes, which may switch to another
	// ("Switched APIC routing to").
	if all := reRouting.FindAllStringSubmatch(log, -1); len(all) > 0 {
		m := all[len(all)-1]
		switch m[1] {
		case "physical flat":
			s.APICMode = "physflat"
		case "cluster x2apic", "x2apic cluster":
			s.APICMode = "cluster x2apic"
		case "physical x2apic", "x2apic physical":
			s.APICMode = "physical x2apic"
		case "mixed x2apic":
			s.APICMode = "mixed"
		default:
			s.APICMode = m[1]
		}
	}
	if reMixed.MatchString(log) {
		s.APICMode = "mixed"
	}
	s.X2APIC = reX2APIC.MatchString(log) || s.APICMode == "cluster x2apic" || s.APICMode == "physical x2apic" || s.APICMode == "mixed"
	if s.APICMode == "" && !s.X2APIC && reFlatUnset.MatchString(log) {
		s.APICMode = "flat" // the default xAPIC driver prints no switch
	}
	if m := reIRQRemap.FindStringSubmatch(log); m != nil {
		s.IRQRemap = m[1]
	}
	if m := reSMP.FindStringSubmatch(log); m != nil {
		s.CPUsUp, _ = strconv.Atoi(m[1])
	}
	s.InitRun = reInit.MatchString(log)
	s.PVIPI = rePVIPI.MatchString(log)
	s.KVMPVIPI = reKVMPVIPI.MatchString(log)
	s.Panic = rePanic.FindString(log)
	s.KernelLine = reLinux.FindString(log)
	return s
}
