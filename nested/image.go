package nested

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

//go:embed init.sh
var initScript []byte

// image is a built L1: Debian's kernel and a base initramfs (busybox,
// /init, the kernel modules in load order). It lives under the cache,
// named by a hash of what went into it, so a second run reuses it and a
// change to /init or the module list builds a new one.
type image struct {
	Dir     string   // the image's directory under the cache
	Kernel  string   // Debian's vmlinuz
	Base    string   // the base initramfs (newc cpio)
	Modules []string // module file names under /lib/modules, in load order
}

// modulesFor are the modules each host loads by name; their dependencies
// (irqbypass, ccp, kvm, virtio_ring, netfs, ...) follow from modinfo.
func modulesFor(h Host) []string {
	switch h {
	case AMD:
		// 9p over virtio-pci for the machine's files, an overlay on them.
		return []string{"kvm_amd", "virtio_pci", "9pnet_virtio", "9p", "overlay"}
	case Intel:
		// Bochs has no virtio: the files travel in the initramfs.
		return []string{"kvm_intel"}
	}
	panic(fmt.Sprintf("nested: unknown host %d", h))
}

// buildImage makes (or finds) the L1 image of host h under cache.
func buildImage(cache string, h Host, logf func(string, ...any)) (*image, error) {
	mods := modulesFor(h)
	sum := sha256.New()
	sum.Write(initScript)
	fmt.Fprintf(sum, "%s %s v1", h, strings.Join(mods, ","))
	key := hex.EncodeToString(sum.Sum(nil))[:12]
	dir := filepath.Join(cache, "nested", fmt.Sprintf("image-%s-%s", h, key))
	img := &image{Dir: dir, Kernel: filepath.Join(dir, "vmlinuz"), Base: filepath.Join(dir, "base.cpio")}
	if img.ready() {
		return img, nil
	}
	// One build at a time: make test starts its L1s side by side, and two
	// builders shared the download directory, one emptying it under the
	// other (a CI run's first L1 failed so when /init changed). The one
	// that waited finds the image built.
	unlock, err := lockBuild(filepath.Join(cache, "nested", "image.lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	if img.ready() {
		return img, nil
	}

	logf("nested: building the %s L1 image in %s (Debian's linux-image-amd64 and busybox-static)", h, dir)
	kpkg, err := resolveKernelPackage()
	if err != nil {
		return nil, err
	}
	work := filepath.Join(cache, "nested", "debs")
	os.RemoveAll(work)
	logf("nested: downloading and unpacking %s and busybox-static (apt-get download)", kpkg)
	root, err := downloadExtract(work, kpkg, "busybox-static")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	vmlinuz, _ := filepath.Glob(filepath.Join(root, "boot", "vmlinuz-*"))
	moddirs, _ := filepath.Glob(filepath.Join(root, "lib", "modules", "*"))
	if len(vmlinuz) != 1 || len(moddirs) != 1 {
		return nil, fmt.Errorf("%s holds %d kernels and %d module trees, want one each", kpkg, len(vmlinuz), len(moddirs))
	}
	idx, err := indexModules(moddirs[0])
	if err != nil {
		return nil, err
	}
	order, err := idx.loadOrder(mods, modinfoDepends)
	if err != nil {
		return nil, err
	}
	logf("nested: packing the L1 initramfs: busybox, the init script and %d modules (%s with their dependencies)", len(order), strings.Join(mods, ", "))
	busybox, err := os.ReadFile(filepath.Join(root, "bin", "busybox"))
	if err != nil {
		return nil, fmt.Errorf("busybox-static: %w", err)
	}

	var cpio bytes.Buffer
	w := newCPIO(&cpio)
	for _, d := range []string{"bin", "sbin", "usr/bin", "usr/sbin", "proc", "sys", "dev", "tmp", "etc", "lib/modules"} {
		w.mkdirAll(d)
	}
	w.file("bin/busybox", 0o755, busybox)
	w.symlink("bin/sh", "busybox")
	w.file("init", 0o755, initScript)
	for _, p := range order {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		w.file("lib/modules/"+filepath.Base(p), 0o644, b)
		img.Modules = append(img.Modules, filepath.Base(p))
	}
	if err := w.close(); err != nil {
		return nil, err
	}

	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	kernel, err := os.ReadFile(vmlinuz[0])
	if err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{
		"vmlinuz":   kernel,
		"base.cpio": cpio.Bytes(),
		"modules":   []byte(strings.Join(img.Modules, "\n") + "\n"),
		"kernel":    []byte(kpkg + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			return nil, err
		}
	}
	os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return nil, err
	}
	// Images of earlier /init scripts or module lists are of no more use.
	old, _ := filepath.Glob(filepath.Join(cache, "nested", fmt.Sprintf("image-%s-*", h)))
	for _, o := range old {
		if o != dir {
			os.RemoveAll(o)
		}
	}
	logf("nested: %s L1 image ready: %s, modules %s", h, kpkg, strings.Join(img.Modules, " "))
	return img, nil
}

// ready loads the image's module list if the image is complete.
func (img *image) ready() bool {
	b, err := os.ReadFile(filepath.Join(img.Dir, "modules"))
	if err != nil || !exists(img.Kernel) || !exists(img.Base) {
		return false
	}
	img.Modules = strings.Fields(string(b))
	return true
}

// lockBuild takes the exclusive lock of path (flock), waiting for another
// process's build; the returned func releases it.
func lockBuild(path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("nested: locking %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
