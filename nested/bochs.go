package nested

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// bochs runs L1 under Bochs with a Skylake-X CPU model: VT-x with EPT,
// unrestricted guest, VPID and the preemption timer, which kvm_intel
// accepts (no APIC virtualization: Bochs has no posted interrupts).
// Bochs cannot load a kernel itself: L1 boots from a GRUB rescue ISO.
type bochs struct{ bin, mkrescue string }

func newBochs() (*bochs, error) {
	b, err := lookBinary("bochs", "bochs, bochsbios and vgabios")
	if err != nil {
		return nil, err
	}
	m, err := lookBinary("grub-mkrescue", "grub-pc-bin, grub-common, xorriso and mtools")
	if err != nil {
		return nil, err
	}
	for _, f := range []string{"/usr/share/bochs/BIOS-bochs-latest", "/usr/share/vgabios/vgabios.bin"} {
		if !exists(f) {
			return nil, fmt.Errorf("%s not found: install Debian's bochsbios and vgabios (make nested-deps does)", f)
		}
	}
	return &bochs{bin: b, mkrescue: m}, nil
}

func (b *bochs) name() string { return "bochs" }

// cmdline is L1's. tsc_early_khz tells L1 its TSC rate, which Bochs's
// CPUID does not: without it kvm_intel turns VMX's preemption timer off.
func (b *bochs) cmdline(r *run) string {
	c := "console=ttyS0,115200 quiet loglevel=3 panic=-1"
	if r.opt.PreemptionTimer {
		c += " tsc_early_khz=400000"
	}
	return c
}

// iso makes the boot ISO: GRUB on the serial console, L1's kernel and
// the run's initramfs.
func (b *bochs) iso(r *run, initrd string) (string, error) {
	root := filepath.Join(r.tmp, "iso")
	grub := fmt.Sprintf(`serial --unit=0 --speed=115200
terminal_input serial
terminal_output serial
set timeout=0
menuentry "govmm nested L1" {
	linux /boot/vmlinuz %s
	initrd /boot/initrd
}
`, b.cmdline(r))
	if err := os.MkdirAll(filepath.Join(root, "boot", "grub"), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(root, "boot", "grub", "grub.cfg"), []byte(grub), 0o644); err != nil {
		return "", err
	}
	if err := os.Link(r.img.Kernel, filepath.Join(root, "boot", "vmlinuz")); err != nil {
		if err := copyFile(r.img.Kernel, filepath.Join(root, "boot", "vmlinuz")); err != nil {
			return "", err
		}
	}
	if err := os.Rename(initrd, filepath.Join(root, "boot", "initrd")); err != nil {
		return "", err
	}
	iso := filepath.Join(r.tmp, "l1.iso")
	if out, err := exec.Command(b.mkrescue, "-o", iso, root).CombinedOutput(); err != nil {
		return "", fmt.Errorf("grub-mkrescue: %s", firstLine(out, err))
	}
	return iso, nil
}

// config is the bochsrc. Sound is off: Debian's Bochs 2.7 aborts in its
// sound mixer thread ("buffer overflow detected") on a machine without a
// sound card.
func (b *bochs) config(r *run, iso, com1 string) string {
	return fmt.Sprintf(`megs: %d
cpu: model=corei7_skylake_x, count=%d, ips=50000000, ignore_bad_msrs=1
clock: sync=none, time0=local
romimage: file=/usr/share/bochs/BIOS-bochs-latest
vgaromimage: file=/usr/share/vgabios/vgabios.bin
display_library: rfb, options="timeout=0"
ata0-master: type=cdrom, path=%s, status=inserted
boot: cdrom
com1: enabled=1, mode=file, dev=%s
speaker: enabled=0
sound: waveoutdrv=dummy, waveindrv=dummy, midioutdrv=dummy
log: %s
panic: action=fatal
error: action=report
info: action=ignore
debug: action=ignore
`, r.opt.MemMiB, r.opt.CPUs, iso, com1, filepath.Join(r.tmp, "bochs.log"))
}

func (b *bochs) start(ctx context.Context, r *run, initrd string) (func() error, io.Reader, error) {
	iso, err := b.iso(r, initrd)
	if err != nil {
		return nil, nil, err
	}
	com1 := filepath.Join(r.tmp, "com1")
	rc := filepath.Join(r.tmp, "bochsrc")
	cmds := filepath.Join(r.tmp, "debugger-commands")
	if err := os.WriteFile(rc, []byte(b.config(r, iso, com1)), 0o644); err != nil {
		return nil, nil, err
	}
	// Debian's Bochs has its debugger built in and stops before the first
	// instruction: tell it to go on, then to quit when the guest ends.
	if err := os.WriteFile(cmds, []byte("continue\nquit\n"), 0o644); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(com1, nil, 0o644); err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, b.bin, "-q", "-f", rc, "-rc", cmds)
	waitKill(cmd)
	cmd.Dir = r.tmp
	cmd.Stdout = io.Discard
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting bochs: %w", err)
	}
	done := make(chan struct{})
	var werr error
	go func() { werr = cmd.Wait(); close(done) }()
	f, err := os.Open(com1)
	if err != nil {
		return nil, nil, err
	}
	wait := func() error {
		<-done
		f.Close()
		// Bochs ends with status 1 at every ACPI power-off of its guest:
		// that one says nothing went wrong.
		var ee *exec.ExitError
		if errors.As(werr, &ee) && ee.ExitCode() == 1 {
			return nil
		}
		return werr
	}
	return wait, &tailReader{f: f, done: done}, nil
}

// tailReader reads a file that Bochs is still writing (its COM1), until
// Bochs has exited and everything written has been read.
type tailReader struct {
	f    *os.File
	done <-chan struct{}
}

func (t *tailReader) Read(p []byte) (int, error) {
	for {
		n, err := t.f.Read(p)
		if n > 0 {
			return n, nil
		}
		if err != nil && err != io.EOF {
			return 0, err
		}
		select {
		case <-t.done:
			if n, _ := t.f.Read(p); n > 0 {
				return n, nil
			}
			return 0, io.EOF
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}
