package vlapic

// Compatibility-format MSIs (Intel SDM vol. 3A 11.11): a DWORD write to
// 0xFEExxxxx whose address names the destination and whose data names the
// vector. This is how devices (and the IOAPIC's successors) talk to the
// APIC bus when no remapping unit translates them.
const (
	MSIAddrBase     = 0xFEE00000
	MSIAddrMask     = 0xFFF00000
	msiAddrDestMode = 1 << 2 // 1: logical
	msiAddrRH       = 1 << 3 // redirection hint
	msiAddrRemap    = 1 << 4 // VT-d remappable format: not decodable here
	msiDataTrigger  = 1 << 15
	msiDataAssert   = 1 << 14
)

// DecodeMSI decodes a compatibility-format MSI. ok is false when the
// address is not in the interrupt range or is in remappable format (which
// only a remapping unit can translate).
func DecodeMSI(addr uint64, data uint32) (m Message, ok bool) {
	if addr&MSIAddrMask != MSIAddrBase || addr&msiAddrRemap != 0 {
		return Message{}, false
	}
	return DecodeCompatMSI(uint32(addr), data), true
}

// DecodeCompatMSI decodes the fields of a compatibility-format MSI whose
// address is known to be in the interrupt range: destination 19:12, RH
// bit 3, DM bit 2; vector 7:0, delivery mode 10:8, level 14, trigger 15.
// An edge MSI always asserts. Bit 4 is not looked at: a remapping unit
// that is off treats every interrupt request as compatibility format.
//
// Left out: KVM's extended destination ID (address bits 11:5 as
// destination bits 14:8), which needs KVM_FEATURE_MSI_EXT_DEST_ID.
func DecodeCompatMSI(addr, data uint32) Message {
	m := Message{
		Vector:   uint8(data),
		Delivery: DeliveryMode(data >> 8 & 7),
		Dest:     addr >> 12 & 0xFF,
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
	RedirectionHint(&m, addr&msiAddrRH != 0)
	return m
}

// EncodeCompatMSI is DecodeCompatMSI's inverse for m's low 8 destination
// bits: the compatibility-format address (in the interrupt range, RH
// clear) and data of m. The level bit is m.Assert, the trigger bit
// m.Trigger. A destination above 0xFF needs an address form of its own
// (KVM's address_hi with KVM_X2APIC_API_USE_32BIT_IDS, routing.EncodeMSI).
func EncodeCompatMSI(m Message) (addr, data uint32) {
	addr = MSIAddrBase | (m.Dest&0xFF)<<12
	if m.DestMode == Logical {
		addr |= msiAddrDestMode
	}
	data = uint32(m.Vector) | uint32(m.Delivery)<<8
	if m.Assert {
		data |= msiDataAssert
	}
	if m.Trigger == Level {
		data |= msiDataTrigger
	}
	return addr, data
}

// RedirectionHint applies an MSI's or IRTE's RH bit: with a logical
// destination, a fixed interrupt goes to one CPU of the set, i.e. lowest
// priority (what KVM does with msi_redir_hint). A physical destination
// names one CPU already.
func RedirectionHint(m *Message, rh bool) {
	if rh && m.DestMode == Logical && m.Delivery == Fixed {
		m.Delivery = LowestPriority
	}
}
