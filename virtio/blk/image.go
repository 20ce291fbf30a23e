package blk

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// image is the disk image opened twice: buffered for any request, and
// with O_DIRECT for requests aligned as O_DIRECT needs (direct is nil when
// the filesystem refuses O_DIRECT, e.g. tmpfs). Both are set at Open and
// closed by Close; in between they are read-only and shared by the queue
// goroutines.
type image struct {
	buffered *os.File
	direct   *os.File
	size     int64 // bytes, a positive multiple of sectorSize
	// The descriptors of buffered and direct (-1 without direct), taken
	// once: the I/O path calls preadv on them directly.
	bufferedFD, directFD int
}

func openImage(path string, readOnly bool) (*image, error) {
	flags := os.O_RDWR
	if readOnly {
		flags = os.O_RDONLY
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("blk: %w", err)
	}
	switch {
	case fi.IsDir():
		return nil, fmt.Errorf("blk: %s is a directory", path)
	case !fi.Mode().IsRegular() && fi.Mode()&os.ModeDevice == 0:
		return nil, fmt.Errorf("blk: %s is neither a regular file nor a block device", path)
	case fi.Mode()&os.ModeCharDevice != 0:
		return nil, fmt.Errorf("blk: %s is a character device", path)
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil, fmt.Errorf("blk: %w", err)
	}
	// Seek, not Stat: a block device's stat size is 0.
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("blk: size of %s: %w", path, err)
	}
	switch {
	case size == 0:
		f.Close()
		return nil, fmt.Errorf("blk: %s is empty", path)
	case size%sectorSize != 0:
		f.Close()
		return nil, fmt.Errorf("blk: %s is %d bytes, not a multiple of %d", path, size, sectorSize)
	}
	img := &image{buffered: f, size: size, bufferedFD: int(f.Fd()), directFD: -1}
	d, err := os.OpenFile(path, flags|unix.O_DIRECT, 0)
	switch {
	case err == nil:
		img.direct = d
		img.directFD = int(d.Fd())
	case errors.Is(err, unix.EINVAL):
		// The filesystem does not do O_DIRECT: buffered I/O only.
	default:
		f.Close()
		return nil, fmt.Errorf("blk: %w", err)
	}
	return img, nil
}

func (img *image) close() error {
	err := img.buffered.Close()
	if img.direct != nil {
		if e := img.direct.Close(); err == nil {
			err = e
		}
	}
	return err
}
