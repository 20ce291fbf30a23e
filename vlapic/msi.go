package vlapic

// Compatibility-format MSIs (Intel SDM vol. 3A 11.11): a DWORD write to
// 0xFEExxxxx whose address names the destination and whose data names the
// vector. This is how devices (and the IOAPIC's successors) talk to the
// APIC bus when no remapping unit translates them.
const (
	MSIAddrBase     = 0xFEE00000
	MSIAddrMask     = 0xFFF00000
	msiAddrDestMode = 1 << 2 // 1: logical
	msiAddrRemap    = 1 << 4 // VT-d remappable format: not decodable here
	msiDataTrigger  = 1 << 15
	msiDataAssert   = 1 << 14
)

// DecodeMSI decodes a compatibility-format MSI. ok is false when the
// address is not in the interrupt range or is in remappable format. The
// destination is 8 bits (address 19:12); the redirection hint (bit 3) is
// treated as the SDM allows, by the delivery mode alone.
//
// Left out: KVM's extended destination ID (address bits 11:5 as
// destination bits 14:8), which needs KVM_FEATURE_MSI_EXT_DEST_ID.
func DecodeMSI(addr uint64, data uint32) (m Message, ok bool) {
	if addr&MSIAddrMask != MSIAddrBase || addr&msiAddrRemap != 0 {
		return Message{}, false
	}
	m = Message{
		Vector:   uint8(data),
		Delivery: DeliveryMode(data >> 8 & 7),
		Dest:     uint32(addr >> 12 & 0xFF),
		Source:   -1,
		Assert:   true,
	}
	if addr&msiAddrDestMode != 0 {
		m.DestMode = Logical
	}
	if data&msiDataTrigger != 0 {
		m.Trigger = Level
		m.Assert = data&msiDataAssert != 0
	}
	return m, true
}
