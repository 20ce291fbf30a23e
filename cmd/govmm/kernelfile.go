package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
)

// readKernel reads a KERNEL image and refuses one that is no kernel govmm
// loads (a Multiboot kernel, a Linux bzImage or an ELF vmlinux), before
// /dev/kvm is opened: the loaders (package loader) say the rest once the
// guest's memory exists.
func readKernel(path string) ([]byte, error) {
	img, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read kernel image: %w", err)
	}
	if !isKernel(img) {
		return nil, fmt.Errorf("%s: not a kernel: neither a Multiboot kernel (no Multiboot header in its first 8 KiB) nor a Linux bzImage or ELF vmlinux", path)
	}
	return img, nil
}

// isKernel says whether img starts as a kernel the loaders take: an ELF
// file, a bzImage ("HdrS" at 0x202) or a Multiboot header (magic
// 0x1BADB002, 4-byte aligned, in the first 8 KiB).
func isKernel(img []byte) bool {
	if bytes.HasPrefix(img, []byte("\x7fELF")) || len(img) >= 0x206 && string(img[0x202:0x206]) == "HdrS" {
		return true
	}
	for off := 0; off+4 <= min(len(img), 8192); off += 4 {
		if binary.LittleEndian.Uint32(img[off:]) == 0x1BADB002 {
			return true
		}
	}
	return false
}
