package vmm

import (
	"bytes"
	"testing"
)

// The drainer runs every 10 ms while the early console is the guest's
// only one, and once a second after another console device has written.
func TestEarlyConDrainPeriod(t *testing.T) {
	var out bytes.Buffer
	e := &earlyConsole{}
	if p := e.drainPeriod(); p != earlyConDrainEvery {
		t.Fatalf("before any other console: period %v, want %v", p, earlyConDrainEvery)
	}
	c := orderedConsole{e, &out}
	if _, err := c.Write([]byte("virtio console\n")); err != nil {
		t.Fatal(err)
	}
	if p := e.drainPeriod(); p != earlyConDrainIdle {
		t.Fatalf("after the virtio console wrote: period %v, want %v", p, earlyConDrainIdle)
	}
	if out.String() != "virtio console\n" {
		t.Fatalf("console got %q", out.String())
	}
}
