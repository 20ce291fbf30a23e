// Package nested runs a command inside a nested KVM host: a Linux L1
// booted under an emulator that offers hardware virtualization, where
// Debian's kernel loads KVM's own SVM or VMX code and /dev/kvm appears.
// It is how govmm runs, and is tested, on a machine without /dev/kvm, and
// how it meets KVM's SVM and VMX paths on any machine.
//
//   - AMD: QEMU's TCG with -cpu max (AMD-V with nested paging and vGIF);
//     L1 loads kvm_amd. The machine's / is mounted read-only over 9p and
//     the work tree and the cache read-write, and the command runs there
//     in a chroot: binaries, test binaries and QEMU run unchanged.
//   - Intel: Bochs with a Skylake-X CPU model (VT-x with EPT); L1 loads
//     kvm_intel. Bochs has no virtio and loads Linux only through a boot
//     loader, so the command and the files it needs travel in the
//     initramfs of a GRUB rescue ISO; they must be static binaries.
//
// The L1 image (Debian's linux-image-amd64 kernel, the KVM modules and
// their modinfo dependencies, busybox-static and an /init script) is
// built once, with apt-get download and dpkg-deb (nothing is installed),
// and cached under the cache directory. Each run adds a small initramfs
// of its own (the command, its environment, a marker), boots L1, streams
// the command's output and returns its exit status. Everything that goes
// wrong is one error: the emulator missing, KVM refused (with L1's kernel
// log line saying why), L1 stopping early, the command timing out.
//
// Times measured inside are the emulator's, not silicon's; exit counts
// are exact. docs/hosts.md says what each nested host is and is not.
package nested
