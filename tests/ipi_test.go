package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/hostprobe"
	"github.com/govmm/govmm/internal/ipirecv"
	"github.com/govmm/govmm/ipicost"
	"github.com/govmm/govmm/vlapic"
	"github.com/govmm/govmm/vmm"
)

const rounds = 2

// ipiExpect is what the guest code makes deterministic: the APIC exits the
// BSP takes to send, and the EOIs each receiver takes, in each section.
type ipiExpect struct {
	x2      bool
	members int // APs that take part in unicast and multicast
	// ICR writes per section (1 unicast, 2 multicast, 3 broadcast, 4 IPIs
	// to spinning APs, 5 NMIs to them).
	icr [6]int
	// spinners are the APs (APIC IDs 1..spinners) that spin in guest code
	// during sections 4 and 5.
	spinners int
}

// expectFor is ipiExpect in mode on n vCPUs, from the cost model
// (package ipicost).
func expectFor(mode string, n int) ipiExpect {
	e := ipiExpect{x2: ipicost.X2APIC(mode), members: ipicost.Members(mode, n)}
	p := e.members
	e.icr[1] = rounds * p                        // one ICR write per unicast IPI
	e.icr[2] = rounds * ipicost.ICRs(mode, 1, p) // one multicast to every member
	e.icr[3] = rounds * 2                        // all-excluding-self shorthand + broadcast destination
	e.spinners = min(p, 3)
	e.icr[4], e.icr[5] = e.spinners, e.spinners
	return e
}

// TestIPIExitCounts runs ipi.elf in every destination mode and checks, in
// each measured section, exactly the exits the guest code implies:
//   - x2APIC: one ICR WRMSR per IPI (per destination in physical mode, per
//     16-CPU cluster in cluster mode), nothing else on the sender;
//   - xAPIC: per IPI an ICR idle read, an ICR2 write and an ICR write (a
//     shorthand needs no ICR2);
//   - every receiver one EOI per IPI it got;
//   - a receiver running guest code (sections 4, 5) exactly one kick per
//     IPI or NMI (plus, rarely, one spurious kick exit when the kicking
//     thread is preempted between immediate_exit and its signal: counted
//     apart); a halted one none (it is woken, not kicked).
//
// Every receiver's exits are also held, exactly and by cause, against
// what the receiving CPU counted itself (checkReceivers): govmm's own
// accounting of a receiver cannot pass by agreeing with the cost model
// alone.
func TestIPIExitCounts(t *testing.T) { testIPIExitCounts(t, false) }

// TestIPIExitCountsAVIC is TestIPIExitCounts with AVIC-style delivery
// (vmm.Config.AVIC), which implies PV EOI, and the guest using it
// (pveoi=1): the same exact exits, except that no EOI exits at all (each
// EOI is a PV EOI: as many over the run as interrupts injected, and in
// each section as many as the guest saw PV EOI complete) and a spinning
// receiver takes only its kick.
func TestIPIExitCountsAVIC(t *testing.T) { testIPIExitCounts(t, true) }

// checkReceivers holds section sec's exits of every AP against the counts
// ipi.elf's receiving CPUs kept themselves (package ipirecv), which do not
// come from govmm:
//   - HLT exits: the HLTs the AP executed; wake-ups: the interrupts it took
//     at its HLT. ipi.elf sends to a halted AP only once it has been in
//     HLT for a while, and marks sections only then, so a section holds
//     each HLT exit of its receivers, and no other;
//   - EOI exits: the EOIs it wrote; PV EOIs: those PV EOI completed
//     without an exit (govmm learns of one at the vCPU's next exit: a
//     halted AP's HLT exit, inside the section; a spinning one's may fall
//     in the next, so not compared there);
//   - interrupts injected and NMIs: those it took;
//   - kicks: one for each interrupt or NMI it took while running, i.e. not
//     at its HLT (a spinning AP: every one); so wake-ups + kicks is the
//     interrupts and NMIs it received, exactly;
//   - its total: those HLT, EOI and kick exits and nothing else (a spinning
//     AP may add one spurious kick, see TestIPIExitCounts).
func checkReceivers(t *testing.T, g *guestRun, sec int, guest ipirecv.Section, eoi exitcause.Cause, spinners int) {
	t.Helper()
	s := g.section(t, sec)
	if len(guest) != len(s.CPUs)-1 {
		t.Fatalf("section %d: ipi.elf counted %d receivers, govmm has %d APs (rebuild the guests: 'make guests')\nconsole:\n%s",
			sec, len(guest), len(s.CPUs)-1, g.Console)
	}
	for _, ap := range s.CPUs[1:] {
		c := guest[ap.CPU]
		spinner := sec >= 4 && ap.CPU <= spinners
		hlt, eoiN, kick := exits(ap, exitcause.HLT), exits(ap, eoi), exits(ap, exitcause.Kick)
		running := int64(c.IRQs+c.NMIs) - int64(c.Wakes) // taken while not halted
		if hlt != c.HLTs || eoiN != c.EOIs || ap.Wakeups != c.Wakes || int64(kick) != running {
			t.Errorf("section %d: CPU %d: govmm counted %d HLT exits, %d EOI exits, %d wake-ups, %d kicks; "+
				"the CPU itself %d HLTs, %d exiting EOIs, %d interrupts at its HLT, %d interrupts and NMIs while running",
				sec, ap.CPU, hlt, eoiN, ap.Wakeups, kick, c.HLTs, c.EOIs, c.Wakes, running)
		}
		if ap.Wakeups+kick != c.IRQs+c.NMIs {
			t.Errorf("section %d: CPU %d: %d wake-ups and %d kicks for the %d interrupts and NMIs it took", sec, ap.CPU, ap.Wakeups, kick, c.IRQs+c.NMIs)
		}
		if ap.Injected != c.IRQs || ap.NMIs != c.NMIs || (!spinner && ap.PVEOIs != c.PVEOIs) {
			t.Errorf("section %d: CPU %d: govmm injected %d interrupts and %d NMIs and saw %d PV EOIs; the CPU took %d and %d, and PV EOI completed %d",
				sec, ap.CPU, ap.Injected, ap.NMIs, ap.PVEOIs, c.IRQs, c.NMIs, c.PVEOIs)
		}
		total := hlt + eoiN + kick
		if spinner {
			total += exits(ap, exitcause.KickSpurious)
		}
		if ap.Exits != total {
			t.Errorf("section %d: CPU %d took %d exits, want its %d HLT, %d EOI and %d kick exits alone: %v", sec, ap.CPU, ap.Exits, hlt, eoiN, kick, ap.ByCause)
		}
	}
}

func testIPIExitCounts(t *testing.T, avic bool) {
	for _, mode := range ipicost.Modes {
		for _, n := range cpuCounts {
			t.Run(fmt.Sprintf("%s/%d", mode, n), func(t *testing.T) {
				e := expectFor(mode, n)
				cmd := fmt.Sprintf("mode=%s rounds=%d", mode, rounds)
				var edit func(*vmm.Config)
				if avic {
					cmd += " pveoi=1"
					edit = func(c *vmm.Config) { c.AVIC = true }
				}
				g := runGuestWith(t, "ipi.elf", n, e.x2, cmd, edit)
				checkKVMAgrees(t, g)
				recv, err := ipirecv.Parse(g.Console)
				if err != nil {
					t.Fatalf("ipi.elf's receivers' counts: %v\nconsole:\n%s", err, g.Console)
				}
				if want := map[bool]string{false: "plain", true: "avic"}[avic]; g.Report.Delivery != want {
					t.Errorf("report says delivery %q, want %q", g.Report.Delivery, want)
				}
				if avic {
					for _, c := range g.Report.CPUs {
						if c.PVEOIs != c.Injected {
							t.Errorf("CPU %d: %d PV EOIs for %d injections", c.CPU, c.PVEOIs, c.Injected)
						}
					}
				}
				// eoiExits is how many EOI exits a receiver of want
				// interrupts takes: none when each is a PV EOI.
				eoiExits := func(want uint64) uint64 {
					if avic {
						return 0
					}
					return want
				}
				icrW := exitcause.APIC(e.x2, true, uint16(vlapic.RegICR))
				icrR := exitcause.APIC(false, false, uint16(vlapic.RegICR))
				icr2W := exitcause.APIC(false, true, uint16(vlapic.RegICR2))
				eoi := exitcause.APIC(e.x2, true, uint16(vlapic.RegEOI))
				lastSection := 3
				if e.spinners > 0 {
					lastSection = 5
				} else if len(g.Report.Sections) != 3 {
					t.Errorf("%d sections, want 3 (no AP to spin)", len(g.Report.Sections))
				}
				for sec := 1; sec <= lastSection; sec++ {
					s := g.section(t, sec)
					checkReceivers(t, g, sec, recv[sec], eoi, e.spinners)
					bsp := s.CPUs[0]
					send := icrW
					if mode == "pv" && (sec == 1 || sec == 2 || sec == 4) {
						send = exitcause.MSRPVIPI // PV sends; broadcasts and NMIs use the ICR
					}
					wantBSP := map[exitcause.Cause]uint64{send: uint64(e.icr[sec])}
					if !e.x2 {
						wantBSP[icrR] = uint64(e.icr[sec])
						wantBSP[icr2W] = uint64(e.icr[sec])
						if sec == 3 {
							wantBSP[icr2W] = rounds // the shorthand ICRs write no ICR2
						}
					}
					var wantTotal uint64
					for c, want := range wantBSP {
						wantTotal += want
						if got := exits(bsp, c); got != want {
							t.Errorf("section %d: BSP %s = %d, want %d", sec, c, got, want)
						}
					}
					if sec == 3 {
						// The broadcast destination includes the BSP: it EOIs it.
						if got := exits(bsp, eoi); got != eoiExits(rounds) {
							t.Errorf("section 3: BSP EOIs = %d, want %d", got, eoiExits(rounds))
						}
						wantTotal += eoiExits(rounds)
					}
					if bsp.Exits != wantTotal {
						t.Errorf("section %d: BSP took %d exits, want exactly %d: %v", sec, bsp.Exits, wantTotal, bsp.ByCause)
					}
					for _, ap := range s.CPUs[1:] {
						var want, kicks, nmis uint64
						spinner := ap.CPU <= e.spinners
						switch {
						case sec == 3:
							want = 2 * rounds
						case sec == 4 && spinner:
							want, kicks = 1, 1
						case sec == 5 && spinner:
							kicks, nmis = 1, 1
						case sec <= 2 && ap.CPU <= e.members:
							want = rounds
						}
						if got := exits(ap, eoi); got != eoiExits(want) {
							t.Errorf("section %d: CPU %d EOIs = %d, want %d", sec, ap.CPU, got, eoiExits(want))
						}
						// The CPU's own view: every EOI a PV EOI with AVIC, none without.
						if c := recv[sec][ap.CPU]; c.EOIs != eoiExits(want) || c.EOIs+c.PVEOIs != want {
							t.Errorf("section %d: CPU %d wrote %d EOIs and PV EOI completed %d, want %d and %d",
								sec, ap.CPU, c.EOIs, c.PVEOIs, eoiExits(want), want-eoiExits(want))
						}
						if ap.Injected != want {
							t.Errorf("section %d: CPU %d got %d interrupts, want %d", sec, ap.CPU, ap.Injected, want)
						}
						if sec >= 4 {
							if got := exits(ap, exitcause.Kick); got != kicks {
								t.Errorf("section %d: CPU %d kick exits = %d, want %d", sec, ap.CPU, got, kicks)
							}
							if ap.NMIs != nmis {
								t.Errorf("section %d: CPU %d NMIs = %d, want %d", sec, ap.CPU, ap.NMIs, nmis)
							}
							if spinner && ap.Exits-exits(ap, exitcause.KickSpurious) != kicks+eoiExits(want) {
								t.Errorf("section %d: spinning CPU %d took %d exits, want %d: %v", sec, ap.CPU, ap.Exits, kicks+eoiExits(want), ap.ByCause)
							}
						}
					}
				}
			})
		}
	}
}

// TestTimerModes runs the LAPIC timer in each mode on the BSP, in xAPIC
// and x2APIC mode, with the APs (if any) waiting for SIPI.
func TestTimerModes(t *testing.T) {
	for _, mode := range []string{"oneshot", "periodic", "tscdeadline"} {
		for _, x2 := range []bool{false, true} {
			for _, n := range cpuCounts {
				t.Run(fmt.Sprintf("%s/x2apic=%v/%d", mode, x2, n), func(t *testing.T) {
					cmd := "mode=" + mode
					if x2 {
						cmd += " x2apic=1"
					}
					if mode == "tscdeadline" && !tscDeadlineAdvertised(t) {
						wantNoTSCDeadline(t, vmm.Config{CPUs: n, Cmdline: cmd, X2APIC: x2apicSetting(x2)})
						return
					}
					g := runGuest(t, "timer.elf", n, x2, cmd)
					tot := g.Report.Total
					minIRQ := map[string]uint64{"oneshot": 1, "periodic": 3, "tscdeadline": 2}[mode]
					if tot.Injected < minIRQ {
						t.Errorf("%d timer interrupts injected, want at least %d", tot.Injected, minIRQ)
					}
					if mode == "tscdeadline" && exits(tot, exitcause.MSRTSCDeadlineWrite) < 2 {
						t.Errorf("TSC-deadline writes = %d, want >= 2", exits(tot, exitcause.MSRTSCDeadlineWrite))
					}
				})
			}
		}
	}
}

// TestPVEOI runs the IPI guest with KVM's PV EOI served by govmm: every
// interrupt the guest takes ends with a PV EOI (its bit cleared in memory,
// no exit) because each one arrives with nothing else pending; no EOI exit
// is left on any vCPU.
func TestPVEOI(t *testing.T) {
	for _, mode := range []string{"xapic-phys", "x2apic-phys", "x2apic-cluster"} {
		for _, n := range []int{1, 4, 64} {
			t.Run(fmt.Sprintf("%s/%d", mode, n), func(t *testing.T) {
				x2 := strings.HasPrefix(mode, "x2apic")
				g := runGuestWith(t, "ipi.elf", n, x2, "mode="+mode+" pveoi=1", func(c *vmm.Config) { c.PVEOI = true })
				eoi := exitcause.APIC(x2, true, uint16(vlapic.RegEOI))
				for _, c := range g.Report.CPUs {
					if got := exits(c, eoi); got != 0 {
						t.Errorf("CPU %d took %d EOI exits, want 0", c.CPU, got)
					}
					if c.PVEOIs != c.Injected {
						t.Errorf("CPU %d: %d PV EOIs for %d injections", c.CPU, c.PVEOIs, c.Injected)
					}
				}
				if g.Report.Total.PVEOIs == 0 {
					t.Error("no PV EOI at all")
				}
			})
		}
	}
}

// TestTimerWithoutTSCDeadline: with TSC-deadline mode not advertised (what
// govmm does where the host probe finds KVM drops the MSR write, e.g. VMX
// with the preemption timer; forced here with hostprobe.Off) the one-shot
// and periodic LAPIC timer still work, and a guest that wants TSC-deadline
// mode finds CPUID.1:ECX[24] clear.
func TestTimerWithoutTSCDeadline(t *testing.T) {
	off := func(c *vmm.Config) { c.TSCDeadline = hostprobe.Off }
	for _, mode := range []string{"oneshot", "periodic"} {
		t.Run(mode, func(t *testing.T) {
			g := runGuestWith(t, "timer.elf", 1, true, "mode="+mode+" x2apic=1", off)
			if g.Report.Total.Injected == 0 {
				t.Errorf("no timer interrupt injected")
			}
		})
	}
	t.Run("tscdeadline", func(t *testing.T) {
		wantNoTSCDeadline(t, vmm.Config{CPUs: 1, Cmdline: "mode=tscdeadline x2apic=1", TSCDeadline: hostprobe.Off})
	})
}

// tscDeadlineAdvertised is what govmm decides for TSC-deadline mode on this
// host with the flag at auto: not where KVM drops the guest's TSC_DEADLINE
// writes (VMX with its preemption timer, as on the nested VT-x host).
func tscDeadlineAdvertised(t *testing.T) bool {
	t.Helper()
	a, err := vmm.Host()
	if err != nil {
		t.Fatalf("host probe: %v", err)
	}
	return hostprobe.Decide(a, hostprobe.Auto, hostprobe.Auto).TSCDeadline
}

// wantNoTSCDeadline runs timer.elf in TSC-deadline mode where govmm does
// not advertise it: the guest must find the CPUID bit clear and fail.
func wantNoTSCDeadline(t *testing.T, cfg vmm.Config) {
	t.Helper()
	_, res, console := runGuestRaw(t, "timer.elf", cfg, time.Minute)
	if res.Status == 1 || !strings.Contains(console, "CPUID.1:ECX bit 24 (TSC-deadline timer) is clear") {
		t.Errorf("without TSC-deadline mode advertised the guest must find the CPUID bit clear (status %d):\n%s", res.Status, console)
	}
}

func x2apicSetting(on bool) vmm.X2APIC {
	if on {
		return vmm.X2APICOn
	}
	return vmm.X2APICOff
}
