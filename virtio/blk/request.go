package blk

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/govmm/govmm/virtio"
)

// Request types (virtio 1.2 §5.2.6).
const (
	typeIn    = 0 // VIRTIO_BLK_T_IN
	typeOut   = 1 // VIRTIO_BLK_T_OUT
	typeFlush = 4 // VIRTIO_BLK_T_FLUSH
	typeGetID = 8 // VIRTIO_BLK_T_GET_ID
)

// Status values, the request's last device-writable byte.
const (
	statusOK     = 0 // VIRTIO_BLK_S_OK
	statusIOErr  = 1 // VIRTIO_BLK_S_IOERR
	statusUnsupp = 2 // VIRTIO_BLK_S_UNSUPP
)

const headerSize = 16 // struct virtio_blk_outhdr: type, reserved, sector

// errNoStatus is the one request fault that gets no status: the driver
// gave no device-writable byte to put it in.
var errNoStatus = fmt.Errorf("blk: request without a status byte: %w", virtio.ErrBadChain)

// request is a chain taken apart: header fields, the data buffers (which
// alias guest RAM, with the header and the status byte cut off), and where
// the status goes.
type request struct {
	typ    uint32
	sector uint64
	in     [][]byte // device-readable data after the header (OUT)
	out    [][]byte // device-writable data before the status (IN, GET_ID)
	status *byte
	short  bool // the readable part is shorter than a header
}

func parse(c *virtio.Chain) (request, error) {
	var r request
	w := c.Writable
	last := len(w) - 1
	for last >= 0 && len(w[last]) == 0 {
		last--
	}
	if last < 0 {
		return r, errNoStatus
	}
	tail := w[last]
	r.status = &tail[len(tail)-1]
	r.out = append(r.out, w[:last]...)
	if len(tail) > 1 {
		r.out = append(r.out, tail[:len(tail)-1])
	}

	// The header is normally one 16-byte descriptor, but nothing says so:
	// gather it across buffers.
	var hdr [headerSize]byte
	n := 0
	rd := c.Readable
	for len(rd) > 0 && n < headerSize {
		k := copy(hdr[n:], rd[0])
		n += k
		if k < len(rd[0]) {
			r.in = append(r.in, rd[0][k:])
		}
		rd = rd[1:]
	}
	r.in = append(r.in, rd...)
	if n < headerSize {
		r.short = true
		return r, nil
	}
	r.typ = binary.LittleEndian.Uint32(hdr[0:])
	r.sector = binary.LittleEndian.Uint64(hdr[8:])
	return r, nil
}

// serve answers one chain; it fails only when the chain cannot carry a
// status (then the queue stops and the device asks for a reset).
func (d *Device) serve(qc *queueCounters, c *virtio.Chain) (uint32, error) {
	r, err := parse(c)
	if err != nil {
		return 0, err
	}
	var data uint32 // bytes written to r.out
	status := byte(statusOK)
	switch {
	case r.short:
		status = statusIOErr
	case r.typ == typeIn:
		qc.reads.Add(1)
		var n int
		n, err = d.readWrite(qc, r.out, r.sector, false)
		if err == nil {
			data = uint32(n)
			qc.bytesRead.Add(uint64(n))
		}
	case r.typ == typeOut:
		qc.writes.Add(1)
		if d.readOnly {
			err = errReadOnly
			break
		}
		var n int
		n, err = d.readWrite(qc, r.in, r.sector, true)
		if err == nil {
			qc.bytesWritten.Add(uint64(n))
		}
	case r.typ == typeFlush:
		qc.flushes.Add(1)
		if !d.readOnly {
			err = fdatasync(d.img.bufferedFD)
		}
	case r.typ == typeGetID:
		qc.getIDs.Add(1)
		data = uint32(scatter(r.out, d.serial[:]))
	default:
		qc.unsupported.Add(1)
		status = statusUnsupp
	}
	if err != nil {
		status = statusIOErr
		data = 0
	}
	if status == statusIOErr {
		qc.errors.Add(1)
	}
	*r.status = status
	return data + 1, nil
}

var (
	errReadOnly   = errors.New("blk: write to a read-only disk")
	errOutOfRange = errors.New("blk: request beyond the end of the disk")
	errUnaligned  = errors.New("blk: data length not a multiple of 512")
	errTooLarge   = errors.New("blk: request larger than 1 GiB")
)

// maxData bounds one request's data: its length must fit Push's uint32,
// and no driver sends more than a few MiB (seg_max buffers of a page).
const maxData = 1 << 30

// readWrite moves the whole of bufs from/to the disk at sector; it
// returns the byte count. A write returns only after pwritev did: only
// then may the guest hear it is done.
func (d *Device) readWrite(qc *queueCounters, bufs [][]byte, sector uint64, write bool) (int, error) {
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	if n%sectorSize != 0 {
		return 0, errUnaligned
	}
	if n > maxData {
		return 0, errTooLarge
	}
	capacity := uint64(d.img.size) / sectorSize
	if sector > capacity || uint64(n/sectorSize) > capacity-sector {
		return 0, errOutOfRange
	}
	if n == 0 {
		return 0, nil
	}
	off := int64(sector * sectorSize)
	if d.img.direct != nil && aligned(bufs, off) {
		err := transfer(d.img.directFD, bufs, off, write)
		if err == nil {
			qc.directIOs.Add(1)
			return n, nil
		}
		// Some filesystems accept O_DIRECT at open and refuse it at I/O
		// (EINVAL): the buffered descriptor still does the request. Any
		// other error is the disk's, and the buffered retry meets it too.
	}
	qc.bufferedIOs.Add(1)
	if err := transfer(d.img.bufferedFD, bufs, off, write); err != nil {
		return 0, err
	}
	return n, nil
}

// scatter copies src into bufs in order, as much as fits.
func scatter(bufs [][]byte, src []byte) int {
	n := 0
	for _, b := range bufs {
		if n == len(src) {
			break
		}
		n += copy(b, src[n:])
	}
	return n
}
