package blk

import "encoding/binary"

// Feature bits (virtio 1.2 §5.2.3).
const (
	featureSegMax  = 1 << 2  // VIRTIO_BLK_F_SEG_MAX
	featureRO      = 1 << 5  // VIRTIO_BLK_F_RO
	featureBlkSize = 1 << 6  // VIRTIO_BLK_F_BLK_SIZE
	featureFlush   = 1 << 9  // VIRTIO_BLK_F_FLUSH
	featureMQ      = 1 << 12 // VIRTIO_BLK_F_MQ
)

const (
	sectorSize = 512 // the unit of capacity and of a request's sector
	queueSize  = 256
	// segMax leaves room in a queue-sized chain for the header and the
	// status descriptors.
	segMax = queueSize - 2
	// serialLen is GET_ID's answer (VIRTIO_BLK_ID_BYTES).
	serialLen = 20
)

// Offsets in struct virtio_blk_config (virtio 1.2 §5.2.4).
const (
	cfgCapacity  = 0  // le64, in 512-byte sectors
	cfgSizeMax   = 8  // le32
	cfgSegMax    = 12 // le32
	cfgGeometry  = 16 // cylinders le16, heads u8, sectors u8
	cfgBlkSize   = 20 // le32
	cfgTopology  = 24 // 8 bytes
	cfgWriteback = 32 // u8
	cfgNumQueues = 34 // le16
	// The discard and write-zeroes fields follow up to byte 60; we offer
	// neither feature, so they read zero.
	configSize = 60
)

// buildConfig lays out the configuration structure once: nothing in it
// changes while the device exists.
func buildConfig(capacitySectors uint64, queues int) [configSize]byte {
	var c [configSize]byte
	le := binary.LittleEndian
	le.PutUint64(c[cfgCapacity:], capacitySectors)
	le.PutUint32(c[cfgSegMax:], segMax)
	le.PutUint32(c[cfgBlkSize:], sectorSize)
	le.PutUint16(c[cfgNumQueues:], uint16(queues))
	return c
}

// readConfig copies config[off:] into data, zeros past its end.
func readConfig(config []byte, off uint64, data []byte) {
	clear(data)
	if off < uint64(len(config)) {
		copy(data, config[off:])
	}
}
