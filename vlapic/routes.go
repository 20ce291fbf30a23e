// This file implements destination matching (SDM 11.6.2) and the routing
// tables that make it O(destinations).
//
// The tables are rebuilt whole, copy-on-write, whenever a LAPIC's ID, LDR,
// DFR or mode changes; Deliver loads them with one atomic read. They are
// govmm's counterpart of AMD AVIC's physical and logical APIC ID tables
// (avic.go): senders on both delivery paths read them without a lock.
//   - All enabled LAPICs in x2APIC mode: x2APIC IDs are the CPU index and
//     read-only, and the LDR is derived from the ID, so the physical table
//     and the cluster -> [16]cpu table are the identity: physical ID i is
//     CPU i, logical cluster c bit b is CPU 16c+b. No table is stored.
//   - All enabled LAPICs in xAPIC mode: xAPIC ID -> CPU (256 entries), flat
//     LDR bit -> CPU (8) and cluster -> [4]CPU (15 clusters).
//   - Otherwise (xAPIC and x2APIC LAPICs both enabled, as while Linux brings
//     up APs one by one), or when the xAPIC tables cannot be exact (two
//     LAPICs with one xAPIC ID, an LDR bit shared, DFR models mixed): the
//     slow path, which checks every LAPIC with matches.
//
// Matching follows KVM's kvm_apic_match_dest, with two documented choices:
// in xAPIC cluster mode a destination in cluster 0xF addresses every cluster
// (the low nibble picks the members; 0xFF is then plain broadcast) and a LAPIC
// whose LDR is in cluster 0xF is reachable only that way; and a device
// message with destination 0xFF is not broadcast to x2APIC LAPICs (KVM's
// "x2apic broadcast quirk" is left out: it misroutes remapped interrupts for
// APIC ID 255).

package vlapic

import "math/bits"

const (
	routeNone   = iota // no LAPIC enabled
	routeXAPIC         // every enabled LAPIC in xAPIC mode
	routeX2APIC        // every enabled LAPIC in x2APIC mode
	routeSlow          // mixed modes: check every LAPIC
)

const (
	dfrFlat    = 0xF
	dfrCluster = 0x0
	noCPU      = -1
)

type routes struct {
	kind     uint8
	physSlow bool // xAPIC: an ID is shared, phys is not exact
	logSlow  bool // xAPIC: flat/cluster cannot be exact
	cluster  bool // xAPIC logical model is cluster (else flat)
	phys     [256]int32
	flat     [8]int32
	clusters [15][4]int32
}

// rebuild recomputes the routing tables from every LAPIC's key.
func (b *Bus) rebuild() {
	b.rebuildMu.Lock()
	defer b.rebuildMu.Unlock()
	r := new(routes)
	for i := range r.phys {
		r.phys[i] = noCPU
	}
	for i := range r.flat {
		r.flat[i] = noCPU
	}
	for c := range r.clusters {
		for i := range r.clusters[c] {
			r.clusters[c][i] = noCPU
		}
	}
	nx, n2 := 0, 0
	model := -1
	for i := range b.lapics {
		k := b.lapics[i].key.Load()
		switch keyMode(k) {
		case ModeX2APIC:
			n2++
		case ModeXAPIC:
			nx++
			id := keyXID(k)
			if r.phys[id] != noCPU {
				r.physSlow = true
			}
			r.phys[id] = int32(i)
			ldr, m := keyLDR(k), int(keyModel(k))
			if ldr == 0 || (m != dfrFlat && m != dfrCluster) {
				continue // never matched in logical mode but by broadcast
			}
			if model != -1 && model != m {
				r.logSlow = true
			}
			model = m
			if m == dfrFlat {
				for w := ldr; w != 0; w &= w - 1 {
					bit := bits.TrailingZeros8(w)
					if r.flat[bit] != noCPU {
						r.logSlow = true
					}
					r.flat[bit] = int32(i)
				}
				continue
			}
			c := ldr >> 4
			if c == 0xF {
				continue
			}
			for w := ldr & 0xF; w != 0; w &= w - 1 {
				bit := bits.TrailingZeros8(w)
				if r.clusters[c][bit] != noCPU {
					r.logSlow = true
				}
				r.clusters[c][bit] = int32(i)
			}
		}
	}
	r.cluster = model == dfrCluster
	switch {
	case nx > 0 && n2 > 0:
		r.kind = routeSlow
	case nx > 0:
		r.kind = routeXAPIC
	case n2 > 0:
		r.kind = routeX2APIC
	}
	b.routes.Store(r)
}

// forTargets calls fn once for every LAPIC that m addresses: CPU order for
// broadcasts, shorthands and x2APIC, LDR bit order for xAPIC logical.
// Hardware-disabled LAPICs may be visited; accept rejects them.
func (b *Bus) forTargets(m *Message, fn func(a *LAPIC)) {
	n := len(b.lapics)
	switch m.Shorthand {
	case Self:
		if m.Source >= 0 && m.Source < n {
			fn(&b.lapics[m.Source])
		}
		return
	case AllIncludingSelf:
		b.forAll(-1, fn)
		return
	case AllExcludingSelf:
		b.forAll(m.Source, fn)
		return
	}
	r := b.routes.Load()
	dest := m.Dest
	switch r.kind {
	case routeX2APIC:
		if dest == 0xFFFFFFFF {
			b.forAll(-1, fn)
			return
		}
		if m.DestMode == Physical {
			if uint64(dest) < uint64(n) {
				fn(&b.lapics[dest])
			}
			return
		}
		base := uint64(dest>>16) * 16
		for w := dest & 0xFFFF; w != 0; w &= w - 1 {
			cpu := base + uint64(bits.TrailingZeros32(w))
			if cpu >= uint64(n) {
				return
			}
			fn(&b.lapics[cpu])
		}
	case routeXAPIC:
		if dest == 0xFF {
			b.forAll(-1, fn)
			return
		}
		if m.DestMode == Physical {
			if dest > 0xFF {
				// KVM's hotplug rule: an xAPIC LAPIC whose CPU index
				// does not fit 8 bits answers to its x2APIC ID.
				if uint64(dest) < uint64(n) {
					fn(&b.lapics[dest])
				}
				return
			}
			if r.physSlow {
				b.forSlow(m, fn)
				return
			}
			if c := r.phys[dest]; c != noCPU {
				fn(&b.lapics[c])
			}
			return
		}
		if r.logSlow {
			b.forSlow(m, fn)
			return
		}
		if !r.cluster {
			visitOnce(b, r.flat[:], uint8(dest), fn)
			return
		}
		if dest > 0xFF {
			return
		}
		lo, hi := dest>>4, dest>>4
		if lo == 0xF {
			lo, hi = 0, 14
		}
		for c := lo; c <= hi; c++ {
			visitOnce(b, r.clusters[c][:], uint8(dest&0xF), fn)
		}
	case routeSlow:
		b.forSlow(m, fn)
	}
}

// visitOnce visits the CPUs owning the bits of mask in tab (one LDR bit
// -> CPU); a CPU whose LDR has several of the bits is visited once.
func visitOnce(b *Bus, tab []int32, mask uint8, fn func(a *LAPIC)) {
	var seen [8]int32
	ns := 0
outer:
	for w := mask; w != 0; w &= w - 1 {
		c := tab[bits.TrailingZeros8(w)]
		if c == noCPU {
			continue
		}
		for _, s := range seen[:ns] {
			if s == c {
				continue outer
			}
		}
		seen[ns] = c
		ns++
		fn(&b.lapics[c])
	}
}

func (b *Bus) forAll(except int, fn func(a *LAPIC)) {
	for i := range b.lapics {
		if i != except {
			fn(&b.lapics[i])
		}
	}
}

// forSlow checks every LAPIC: O(vCPUs), only for inconsistent setups.
func (b *Bus) forSlow(m *Message, fn func(a *LAPIC)) {
	for i := range b.lapics {
		if matches(b.lapics[i].key.Load(), i, m.Dest, m.DestMode) {
			fn(&b.lapics[i])
		}
	}
}

// matches reports whether the LAPIC of CPU cpu with routing key k is
// addressed by dest in mode dm (no shorthand). It is the definition the
// tables must agree with.
func matches(k uint32, cpu int, dest uint32, dm DestMode) bool {
	switch keyMode(k) {
	case ModeX2APIC:
		if dest == 0xFFFFFFFF {
			return true
		}
		if dm == Physical {
			return uint64(dest) == uint64(cpu)
		}
		ldr := x2LDR(uint32(cpu))
		return ldr>>16 == dest>>16 && ldr&dest&0xFFFF != 0
	case ModeXAPIC:
		if dest == 0xFF {
			return true
		}
		if dm == Physical {
			return dest == uint32(keyXID(k)) || (cpu > 0xFF && uint64(dest) == uint64(cpu))
		}
		ldr := uint32(keyLDR(k))
		switch keyModel(k) {
		case dfrFlat:
			return ldr&dest != 0
		case dfrCluster:
			if dest > 0xFF || ldr>>4 == 0xF {
				return false
			}
			return (dest>>4 == 0xF || dest>>4 == ldr>>4) && ldr&dest&0xF != 0
		}
	}
	return false
}
