package snapshot

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

type state struct {
	A int
	B string
}

// write makes a snapshot in a fresh directory: a state file and 1 MiB of
// memory with two non-zero pages.
func write(t *testing.T) (string, []byte) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "snap")
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	mem := make([]byte, 1<<20)
	mem[0], mem[5*pageSize+7], mem[len(mem)-1] = 1, 2, 3
	if err := w.WriteJSON("cpu0.json", state{7, "seven"}); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteMemory("memory", mem); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(map[string]int{"cpus": 2}, "test"); err != nil {
		t.Fatal(err)
	}
	return dir, mem
}

// TestRoundTrip: what was written reads back the same, the memory file's
// zero pages are holes, and the manifest carries the configuration.
func TestRoundTrip(t *testing.T) {
	dir, mem := write(t)
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var s state
	if err := r.ReadJSON("cpu0.json", &s); err != nil || s != (state{7, "seven"}) {
		t.Errorf("state read back %+v, %v", s, err)
	}
	// Memory that held something else (New's ACPI tables) gets the
	// file's holes as zeros.
	got := bytes.Repeat([]byte{0xAA}, len(mem))
	if err := r.ReadMemory("memory", got); err != nil || !bytes.Equal(got, mem) {
		t.Errorf("memory read back differs (%v)", err)
	}
	got = mmapped(t, len(mem))
	for i := range got {
		got[i] = 0x55
	}
	if err := r.ReadMemory("memory", got); err != nil || !bytes.Equal(got, mem) {
		t.Errorf("memory read back into an mmap'd region differs (%v)", err)
	}
	var cfg map[string]int
	if err := json.Unmarshal(r.Manifest.Config, &cfg); err != nil || cfg["cpus"] != 2 {
		t.Errorf("config %s, %v", r.Manifest.Config, err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dir, "memory"), &st); err != nil {
		t.Fatal(err)
	}
	if used := st.Blocks * 512; used > 64<<10 {
		t.Errorf("1 MiB of memory with 3 pages set takes %d bytes on disk: not sparse", used)
	}
	if err := r.ReadMemory("memory", make([]byte, 4096)); err == nil || !strings.Contains(err.Error(), "the VM has 4096") {
		t.Errorf("memory of another size: %v", err)
	}
}

// TestRefused: a snapshot of another format version, a truncated,
// extended or damaged file, a missing file or manifest, and a manifest
// naming a path outside the directory are each refused with one line.
func TestRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(dir string)
		want string
	}{
		{"version", func(dir string) { editManifest(t, dir, func(m *Manifest) { m.Format = 99; m.Govmm = "v9" }) },
			"is format version 99 (written by govmm v9); this govmm reads version " + strconv.Itoa(FormatVersion)},
		{"truncated", func(dir string) { os.Truncate(filepath.Join(dir, "memory"), 4096) }, "memory is 4096 bytes, the manifest says 1048576"},
		{"extended", func(dir string) { os.Truncate(filepath.Join(dir, "memory"), 2<<20) }, "truncated or extended"},
		{"damaged", func(dir string) {
			f, _ := os.OpenFile(filepath.Join(dir, "memory"), os.O_WRONLY, 0)
			f.WriteAt([]byte{0xFF}, 12345)
			f.Close()
		}, "memory is damaged"},
		{"missing", func(dir string) { os.Remove(filepath.Join(dir, "cpu0.json")) }, "cpu0.json"},
		{"no manifest", func(dir string) { os.Remove(filepath.Join(dir, ManifestName)) }, "no manifest"},
		{"garbled manifest", func(dir string) { os.WriteFile(filepath.Join(dir, ManifestName), []byte("{"), 0o600) }, "damaged manifest"},
		{"escape", func(dir string) {
			editManifest(t, dir, func(m *Manifest) { m.Files = append(m.Files, File{Name: "../x"}) })
		}, `names "../x"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := write(t)
			c.edit(dir)
			_, err := Open(dir)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %v, want one line containing %q", err, c.want)
			}
		})
	}
}

// TestCreateRefuses: a snapshot never goes into a directory with files in
// it, and never under a name that is not a plain file name.
func TestCreateRefuses(t *testing.T) {
	dir, _ := write(t)
	if _, err := Create(dir); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("Create over a snapshot: %v", err)
	}
	w, err := Create(filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"../evil", ManifestName, "a/b"} {
		if err := w.WriteJSON(name, 1); err == nil {
			t.Errorf("WriteJSON(%q) accepted", name)
		}
	}
}

func editManifest(t *testing.T, dir string, edit func(*Manifest)) {
	t.Helper()
	p := filepath.Join(dir, ManifestName)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(&m)
	b, _ = json.Marshal(m)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestPrepare: a snapshot whose files were all opened ahead (what a
// sandboxed govmm writes into) reads back as one written the usual way;
// a file not prepared is refused; and until the manifest is written the
// directory is no snapshot.
func TestPrepare(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snap")
	w, err := Prepare(dir, []string{"cpu0.json", "memory"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "damaged manifest") {
		t.Errorf("a prepared, unwritten snapshot opens: %v", err)
	}
	if err := w.WriteJSON("other.json", 1); err == nil || !strings.Contains(err.Error(), "not prepared") {
		t.Errorf("an unprepared file: %v", err)
	}
	mem := make([]byte, 64<<10)
	mem[100] = 9
	if err := w.WriteJSON("cpu0.json", state{1, "one"}); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteMemory("memory", mem); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(nil, "test"); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(mem))
	var s state
	if r.ReadMemory("memory", got) != nil || got[100] != 9 || r.ReadJSON("cpu0.json", &s) != nil || s.A != 1 {
		t.Errorf("prepared snapshot reads back wrong: %+v", s)
	}
	if w.Bytes() != int64(len(mem))+r.Manifest.Files[0].Size {
		t.Errorf("Bytes %d", w.Bytes())
	}
}

// mmapped is n bytes of private anonymous memory, as guest RAM is.
func mmapped(t *testing.T, n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(b) })
	return b
}
