package kvm

import (
	"os"
	"regexp"
	"testing"
)

// TestIoctlsListsEveryRequest: every request number ioctl.go declares is
// classified in Ioctls, once, so none reaches the sandbox unconsidered: a
// new one left out would be refused under the filter, or let through
// without a reason.
func TestIoctlsListsEveryRequest(t *testing.T) {
	src, err := os.ReadFile("ioctl.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := regexp.MustCompile(`(?m)^\t(kvm[A-Z]\w*)\s+= `).FindAllSubmatch(src, -1)
	if len(declared) < 30 {
		t.Fatalf("found %d request declarations in ioctl.go: the pattern no longer matches it", len(declared))
	}
	seen := map[uintptr]string{}
	for _, i := range Ioctls {
		if prev, dup := seen[i.Request]; dup {
			t.Errorf("%s and %s share request %#x", prev, i.Name, i.Request)
		}
		seen[i.Request] = i.Name
		if i.Why == "" {
			t.Errorf("%s has no reason", i.Name)
		}
	}
	if len(Ioctls) != len(declared) {
		t.Errorf("ioctl.go declares %d requests, Ioctls classifies %d", len(declared), len(Ioctls))
	}
	if r, ok := IoctlNamed("KVM_RUN"); !ok || r != kvmRun || !Ioctls[0].Running || Ioctls[0].Request != kvmRun {
		t.Errorf("KVM_RUN: %#x %v; Ioctls[0] %+v: want KVM_RUN first, running", r, ok, Ioctls[0])
	}
	if _, ok := IoctlNamed("KVM_NOPE"); ok {
		t.Error("IoctlNamed found a name Ioctls does not list")
	}
}
