package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestKVMModule: the vendor module is named from sysfs, kvm_pvm first.
func TestKVMModule(t *testing.T) {
	dir := t.TempDir()
	if m := kvmModule(dir); m != "" {
		t.Errorf("no modules: %q", m)
	}
	for _, m := range []string{"kvm", "kvm_amd"} {
		if err := os.Mkdir(filepath.Join(dir, m), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if m := kvmModule(dir); m != "kvm_amd" {
		t.Errorf("kvm and kvm_amd loaded: %q, want kvm_amd", m)
	}
	if err := os.Mkdir(filepath.Join(dir, "kvm_pvm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if m := kvmModule(dir); m != "kvm_pvm" {
		t.Errorf("kvm_pvm loaded too: %q, want kvm_pvm", m)
	}
}
