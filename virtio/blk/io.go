package blk

import (
	"errors"
	"io"
	"unsafe"

	"golang.org/x/sys/unix"
)

// directAlign is the alignment of buffer addresses, lengths and file
// offsets for which a request goes to the O_DIRECT descriptor. 4096 covers
// every logical block size in use; guest RAM is page-aligned, so a Linux
// guest's page-sized bios qualify.
const directAlign = 4096

// maxIOV bounds one preadv/pwritev call (IOV_MAX on Linux); an indirect
// chain can hold more buffers than that.
const maxIOV = 1024

func aligned(bufs [][]byte, off int64) bool {
	if off%directAlign != 0 {
		return false
	}
	for _, b := range bufs {
		if len(b)%directAlign != 0 || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%directAlign != 0 {
			return false
		}
	}
	return true
}

// errShort is a read that met the end of the file early (the image shrank
// under us) or a write that made no progress.
var errShort = errors.New("blk: short transfer")

// transfer reads (write false) or writes the whole of bufs at off with
// preadv/pwritev, straight between the file and the buffers, resuming
// after short transfers and EINTR.
func transfer(fd int, bufs [][]byte, off int64, write bool) error {
	// Our own copy of the slice headers: resuming trims them.
	rest := make([][]byte, 0, len(bufs))
	for _, b := range bufs {
		if len(b) > 0 {
			rest = append(rest, b)
		}
	}
	for len(rest) > 0 {
		batch := rest[:min(len(rest), maxIOV)]
		var n int
		var err error
		if write {
			n, err = unix.Pwritev(fd, batch, off)
		} else {
			n, err = unix.Preadv(fd, batch, off)
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			if write {
				return errShort
			}
			return io.ErrUnexpectedEOF
		}
		off += int64(n)
		for n > 0 {
			if n >= len(rest[0]) {
				n -= len(rest[0])
				rest = rest[1:]
			} else {
				rest[0] = rest[0][n:]
				n = 0
			}
		}
	}
	return nil
}
