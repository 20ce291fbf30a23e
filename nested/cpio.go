package nested

import (
	"fmt"
	"io"
	"strings"
)

// cpioWriter writes an initramfs in the "newc" cpio format the kernel
// unpacks (Documentation/driver-api/early-userspace/buffer-format.rst):
// a 110-byte ASCII header per entry, the name and the data each padded to
// four bytes, and a TRAILER!!! entry at the end. Several such archives
// may be concatenated; the kernel unpacks them in order, later entries
// replacing earlier ones.
type cpioWriter struct {
	w    io.Writer
	ino  int
	err  error
	dirs map[string]bool
}

func newCPIO(w io.Writer) *cpioWriter {
	return &cpioWriter{w: w, ino: 1, dirs: map[string]bool{}}
}

const (
	cpioDir  = 0o040000
	cpioFile = 0o100000
	cpioLink = 0o120000
)

func (c *cpioWriter) entry(name string, mode int, data []byte) {
	if c.err != nil {
		return
	}
	name = strings.TrimPrefix(name, "/")
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
	c.ino++
	buf := append([]byte(hdr), name...)
	buf = append(buf, 0)
	buf = pad4(buf)
	buf = append(buf, data...)
	buf = pad4(buf)
	_, c.err = c.w.Write(buf)
}

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// mkdirAll adds the directory and its parents not yet written.
func (c *cpioWriter) mkdirAll(dir string) {
	dir = strings.Trim(dir, "/")
	if dir == "" || dir == "." || c.dirs[dir] {
		return
	}
	if i := strings.LastIndex(dir, "/"); i > 0 {
		c.mkdirAll(dir[:i])
	}
	c.dirs[dir] = true
	c.entry(dir, cpioDir|0o755, nil)
}

// file adds a regular file (and its directories) with permission perm.
func (c *cpioWriter) file(name string, perm int, data []byte) {
	if i := strings.LastIndex(strings.Trim(name, "/"), "/"); i > 0 {
		c.mkdirAll(strings.Trim(name, "/")[:i])
	}
	c.entry(name, cpioFile|perm, data)
}

// symlink adds a symbolic link name -> target.
func (c *cpioWriter) symlink(name, target string) {
	c.entry(name, cpioLink|0o777, []byte(target))
}

// close writes the trailer and returns the first error met.
func (c *cpioWriter) close() error {
	c.entry("TRAILER!!!", 0, nil)
	return c.err
}
