package vmm

import "testing"

func TestParseDisk(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Disk
		ok   bool
	}{
		{"img", Disk{Path: "img"}, true},
		{"/d/img,ro", Disk{Path: "/d/img", ReadOnly: true}, true},
		{"img,rw", Disk{Path: "img"}, true},
		{"", Disk{}, false},
		{",ro", Disk{}, false},
		{"img,wo", Disk{}, false},
	} {
		got, err := ParseDisk(c.in)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("ParseDisk(%q) = %+v, %v; want %+v, ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}
