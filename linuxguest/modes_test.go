package linuxguest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/govmm/govmm/vmm"
)

func TestVMConfigRefuses(t *testing.T) {
	for _, c := range []struct {
		mode  string
		cpus  int
		govmm bool
	}{{"off", 300, true}, {"physical", 256, true}, {"mixed", 2, false}, {"bogus", 2, true}} {
		if _, _, err := VMConfig(c.mode, c.cpus, c.govmm, false, ""); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	cfg, _, err := VMConfig("mixed", 288, true, false, "quiet")
	if err != nil || !cfg.IOMMU || cfg.X2APIC != vmm.X2APICOn {
		t.Fatalf("mixed on 288: %+v %v", cfg, err)
	}
	if want := "govmm.apic=mixed quiet"; len(cfg.Cmdline) < len(want) || cfg.Cmdline[len(cfg.Cmdline)-len(want):] != want {
		t.Errorf("command line %q does not end with %q", cfg.Cmdline, want)
	}
}

// TestVMConfigConsole: govmm's kernel gets the virtio console and hvc0 as
// its console; a stock kernel keeps the serial port; both print early
// messages on the serial port.
func TestVMConfigConsole(t *testing.T) {
	for _, govmm := range []bool{true, false} {
		cfg, _, err := VMConfig("cluster", 2, govmm, false, "")
		if err != nil {
			t.Fatal(err)
		}
		want, not := ConsoleVirtio, ConsoleSerial
		if !govmm {
			want, not = not, want
		}
		args := " " + cfg.Cmdline + " "
		if cfg.VirtioConsole != govmm || !strings.Contains(args, " "+want+" ") || strings.Contains(args, " "+not+" ") ||
			!strings.Contains(args, " "+EarlyConsole+" ") {
			t.Errorf("govmm kernel %v: virtio console %v, command line %q", govmm, cfg.VirtioConsole, cfg.Cmdline)
		}
	}
}

// TestEarlyConsoleAddress: the command line's early console is where the
// VM puts it.
func TestEarlyConsoleAddress(t *testing.T) {
	if want := fmt.Sprintf("earlycon=uart8250,mmio32,%#x", vmm.EarlyConBase); EarlyConsole != want {
		t.Errorf("EarlyConsole %q, want %q", EarlyConsole, want)
	}
}

// TestSetConsole: serial and virtio swap the console= argument and the
// device; auto keeps VMConfig's; anything else is refused.
func TestSetConsole(t *testing.T) {
	cfg, _, err := VMConfig("cluster", 2, true, false, "")
	if err != nil {
		t.Fatal(err)
	}
	auto := cfg
	if err := SetConsole(&auto, "auto"); err != nil || auto.Cmdline != cfg.Cmdline || !auto.VirtioConsole {
		t.Errorf("auto: %v, %q, virtio %v", err, auto.Cmdline, auto.VirtioConsole)
	}
	if err := SetConsole(&cfg, "serial"); err != nil || cfg.VirtioConsole || !strings.Contains(" "+cfg.Cmdline+" ", " "+ConsoleSerial+" ") ||
		strings.Contains(cfg.Cmdline, ConsoleVirtio) {
		t.Errorf("serial: %v, %q, virtio %v", err, cfg.Cmdline, cfg.VirtioConsole)
	}
	if err := SetConsole(&cfg, "virtio"); err != nil || !cfg.VirtioConsole || strings.Contains(cfg.Cmdline, ConsoleSerial) {
		t.Errorf("virtio: %v, %q, virtio %v", err, cfg.Cmdline, cfg.VirtioConsole)
	}
	if err := SetConsole(&cfg, "vga"); err == nil {
		t.Error("console vga accepted")
	}
}
