package nested

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
)

// qemu runs L1 under QEMU's TCG with -cpu max: AMD-V (SVM with nested
// paging and vGIF) that kvm_amd accepts.
type qemu struct{ bin string }

func newQEMU() (*qemu, error) {
	p, err := lookBinary("qemu-system-x86_64", "qemu-system-x86")
	if err != nil {
		return nil, err
	}
	return &qemu{bin: p}, nil
}

func (q *qemu) name() string { return "qemu-system-x86_64" }

func (q *qemu) args(r *run, initrd string) []string {
	thread := "single"
	if r.opt.MultiThreadTCG {
		thread = "multi"
	}
	a := []string{
		"-accel", "tcg,thread=" + thread,
		"-cpu", "max",
		"-smp", strconv.Itoa(r.opt.CPUs),
		"-m", strconv.Itoa(r.opt.MemMiB),
		"-kernel", r.img.Kernel,
		"-initrd", initrd,
		"-append", "console=ttyS0 quiet loglevel=3 panic=-1",
		"-display", "none", "-vga", "none", "-monitor", "none",
		"-serial", "stdio", "-nic", "none", "-no-reboot",
		"-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
	}
	for i, d := range r.shares() {
		a = append(a, "-virtfs", fmt.Sprintf("local,path=%s,mount_tag=share%d,security_model=none,multidevs=remap", d, i))
	}
	return a
}

func (q *qemu) start(ctx context.Context, r *run, initrd string) (func() error, io.Reader, error) {
	cmd := exec.CommandContext(ctx, q.bin, q.args(r, initrd)...)
	waitKill(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.Stderr = prefixWriter{w: r.opt.Stderr, prefix: "qemu: "}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting %s: %w", q.bin, err)
	}
	return cmd.Wait, out, nil
}

// prefixWriter writes each write with a prefix (QEMU's own messages).
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix+string(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}
