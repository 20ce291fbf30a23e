// Package snapshot is the on-disk form of a saved VM (govmm snapshot,
// govmm restore): a directory holding a versioned manifest and the files
// it names, each with its size and SHA-256, as Firecracker keeps a
// snapshot as a state file plus a memory file. Guest memory is written as
// a sparse file (pages of zeros are holes); every other component's state
// is a JSON file of its own. The manifest is written last, by rename, so a
// directory with a manifest holds a complete snapshot; reading checks the
// format version and every file's size and hash before anything is used,
// so a damaged or truncated snapshot is refused with one line and nothing
// of it reaches a guest.
package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// FormatVersion is the snapshot format this govmm writes and reads. A
// change to any component's saved form is a new version. 2: KVM's LAPIC
// and PV EOI in the vCPUs' state; a memory file's hash covers its
// non-zero pages only (sparseHash). 3: fw_cfg's selection (fwcfg.json).
const FormatVersion = 3

// ManifestName is the manifest's file name in a snapshot directory.
const ManifestName = "manifest.json"

// Manifest describes a snapshot.
type Manifest struct {
	Format  int       `json:"format"`
	Govmm   string    `json:"govmm"` // the govmm that wrote it (its version)
	Created time.Time `json:"created"`
	// Config is the VM's configuration as its writer encodes it (vmm's).
	Config json.RawMessage `json:"config"`
	Files  []File          `json:"files"`
}

// File is one file of a snapshot.
type File struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Sparse bool   `json:"sparse,omitempty"` // guest memory: zero pages are holes
}

// Writer writes a snapshot into a new directory.
type Writer struct {
	dir   string
	files []File
	// open are the files Prepare opened ahead, by name (with the
	// manifest): a process confined to no open(2) (package sandbox)
	// writes through them.
	open map[string]*os.File
}

// Create makes dir (which must not exist, or be empty) for a snapshot.
func Create(dir string) (*Writer, error) {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if len(ents) > 0 {
		return nil, fmt.Errorf("snapshot: %s is not empty", dir)
	}
	return &Writer{dir: dir}, nil
}

// Prepare is Create that also opens, now, every file the snapshot will
// have (names, and the manifest), so that writing it later needs no
// open(2) or rename(2): what a sandboxed govmm may no longer do. The
// manifest is then written in place, last; until it is complete the
// directory reads as a damaged snapshot, never as a good one.
func Prepare(dir string, names []string) (*Writer, error) {
	w, err := Create(dir)
	if err != nil {
		return nil, err
	}
	w.open = map[string]*os.File{}
	for _, n := range append(slices.Clone(names), ManifestName) {
		if n != ManifestName && (filepath.Base(n) != n) {
			w.Close()
			return nil, fmt.Errorf("snapshot: %q is not a file name a snapshot may use", n)
		}
		f, err := os.OpenFile(filepath.Join(dir, n), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		w.open[n] = f
	}
	return w, nil
}

// Close closes the files Prepare opened and not yet written.
func (w *Writer) Close() {
	for n, f := range w.open {
		f.Close()
		delete(w.open, n)
	}
}

// file opens name for writing: Prepare's file, or a new one.
func (w *Writer) file(name string) (*os.File, error) {
	if w.open == nil {
		return os.OpenFile(filepath.Join(w.dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	}
	f, ok := w.open[name]
	if !ok {
		return nil, fmt.Errorf("%s was not prepared", name)
	}
	delete(w.open, name)
	return f, nil
}

// WriteJSON writes v as the JSON file name.
func (w *Writer) WriteJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", name, err)
	}
	return w.write(name, false, func(f *os.File, h hash.Hash) (int64, error) {
		n, err := f.Write(b)
		h.Write(b)
		return int64(n), err
	})
}

// pageSize is the granule of a sparse memory file's holes.
const pageSize = 4096

// WriteMemory writes mem as the sparse file name: pages of zeros are left
// as holes, so an idle guest's memory costs little disk.
func (w *Writer) WriteMemory(name string, mem []byte) error {
	return w.write(name, true, func(f *os.File, h hash.Hash) (int64, error) {
		var zero [pageSize]byte
		for off := 0; off < len(mem); off += pageSize {
			page := mem[off:min(off+pageSize, len(mem))]
			if bytes.Equal(page, zero[:len(page)]) {
				continue
			}
			hashPage(h, off, page)
			if _, err := f.WriteAt(page, int64(off)); err != nil {
				return 0, err
			}
		}
		return int64(len(mem)), f.Truncate(int64(len(mem)))
	})
}

func (w *Writer) write(name string, sparse bool, fill func(*os.File, hash.Hash) (int64, error)) error {
	if name == ManifestName || filepath.Base(name) != name {
		return fmt.Errorf("snapshot: %q is not a file name a snapshot may use", name)
	}
	f, err := w.file(name)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	h := sha256.New()
	n, err := fill(f, h)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", name, err)
	}
	w.files = append(w.files, File{Name: name, Size: n, SHA256: hex.EncodeToString(h.Sum(nil)), Sparse: sparse})
	return nil
}

// Bytes is the size of the files written so far (a memory file's holes
// included).
func (w *Writer) Bytes() int64 {
	var n int64
	for _, f := range w.files {
		n += f.Size
	}
	return n
}

// Finish writes the manifest, naming every file written, with config (the
// VM's configuration) and version (the writer's govmm version). Until it
// returns, the directory is not a snapshot.
func (w *Writer) Finish(config any, version string) error {
	cfg, err := json.Marshal(config)
	if err != nil {
		return fmt.Errorf("snapshot config: %w", err)
	}
	m := Manifest{Format: FormatVersion, Govmm: version, Created: time.Now().UTC(), Config: cfg, Files: w.files}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("snapshot manifest: %w", err)
	}
	if w.open != nil {
		f, err := w.file(ManifestName)
		if err == nil {
			_, err = f.Write(b)
		}
		if err == nil {
			err = f.Sync()
		}
		if f != nil {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		w.Close()
		if err != nil {
			return fmt.Errorf("snapshot manifest: %w", err)
		}
		return nil
	}
	tmp := filepath.Join(w.dir, ManifestName+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(w.dir, ManifestName)); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return nil
}

// Reader reads a snapshot whose every file has been checked.
type Reader struct {
	dir      string
	Manifest Manifest
	byName   map[string]File
}

// Open reads dir's manifest and checks the snapshot: the format version
// (another one is refused, naming both), and every file's size and SHA-256
// (a truncated, extended or damaged file is refused, naming it).
func Open(dir string) (*Reader, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: no manifest: %w", dir, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("snapshot %s: damaged manifest: %v", dir, err)
	}
	if m.Format != FormatVersion {
		return nil, fmt.Errorf("snapshot %s is format version %d (written by govmm %s); this govmm reads version %d", dir, m.Format, m.Govmm, FormatVersion)
	}
	r := &Reader{dir: dir, Manifest: m, byName: map[string]File{}}
	for _, f := range m.Files {
		if filepath.Base(f.Name) != f.Name || f.Name == ManifestName {
			return nil, fmt.Errorf("snapshot %s: the manifest names %q, not a file of the snapshot", dir, f.Name)
		}
		if err := r.check(f); err != nil {
			return nil, err
		}
		r.byName[f.Name] = f
	}
	return r, nil
}

// A memory file's hash (File.Sparse) is SHA-256 over its non-zero pages,
// each as its offset (8 bytes, little-endian) and its bytes: the same
// check as a hash of every byte (a zero page that became non-zero adds a
// page, a changed page changes its bytes, and the size is checked apart),
// without hashing the holes, which are most of a guest's memory (a
// 512 MiB Linux guest at its shell: about 90%) and cost the most in an
// emulated host.
func hashPage(h hash.Hash, off int, page []byte) {
	var o [8]byte
	binary.LittleEndian.PutUint64(o[:], uint64(off))
	h.Write(o[:])
	h.Write(page)
}

// hashSparse hashes the memory file f, of size bytes, as hashPage does,
// reading only its data (dataExtents): its holes are zero pages, which
// hashPage leaves out.
func hashSparse(h hash.Hash, f *os.File, size int64) error {
	var zero [pageSize]byte
	buf := make([]byte, 1<<20)
	return dataExtents(f, size, func(lo, hi int64) error {
		for off := lo; off < hi; {
			n := min(int64(len(buf)), hi-off)
			if _, err := f.ReadAt(buf[:n], off); err != nil {
				return err
			}
			for p := int64(0); p < n; p += pageSize {
				page := buf[p:min(p+pageSize, n)]
				if !bytes.Equal(page, zero[:len(page)]) {
					hashPage(h, int(off+p), page)
				}
			}
			off += n
		}
		return nil
	})
}

// dataExtents calls fn for each range of f (of size bytes) that may hold
// data, in order, page-aligned: the ranges between its holes, found with
// lseek's SEEK_DATA and SEEK_HOLE. Where the file system cannot tell, the
// whole file is one range.
func dataExtents(f *os.File, size int64, fn func(lo, hi int64) error) error {
	fd := int(f.Fd())
	for off := int64(0); off < size; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if err == unix.ENXIO {
			return nil // only a hole to the end
		}
		if err != nil {
			if off == 0 && (err == unix.EINVAL || err == unix.EOPNOTSUPP) {
				return fn(0, size)
			}
			return err
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		lo, hi := data&^(pageSize-1), min((hole+pageSize-1)&^(pageSize-1), size)
		if err := fn(lo, hi); err != nil {
			return err
		}
		off = hi
	}
	return nil
}

// check verifies f's size and hash.
func (r *Reader) check(f File) error {
	fd, err := os.Open(filepath.Join(r.dir, f.Name))
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", r.dir, err)
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", r.dir, err)
	}
	if st.Size() != f.Size {
		return fmt.Errorf("snapshot %s: %s is %d bytes, the manifest says %d (truncated or extended)", r.dir, f.Name, st.Size(), f.Size)
	}
	h := sha256.New()
	if f.Sparse {
		err = hashSparse(h, fd, f.Size)
	} else {
		_, err = io.Copy(h, fd)
	}
	if err != nil {
		return fmt.Errorf("snapshot %s: %s: %w", r.dir, f.Name, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 {
		return fmt.Errorf("snapshot %s: %s is damaged (SHA-256 %s, the manifest says %s)", r.dir, f.Name, got[:16], f.SHA256[:min(16, len(f.SHA256))])
	}
	return nil
}

// ReadJSON decodes the JSON file name into v.
func (r *Reader) ReadJSON(name string, v any) error {
	if _, ok := r.byName[name]; !ok {
		return fmt.Errorf("snapshot %s: no %s in the manifest", r.dir, name)
	}
	b, err := os.ReadFile(filepath.Join(r.dir, name))
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", r.dir, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("snapshot %s: %s: %v", r.dir, name, err)
	}
	return nil
}

// ReadMemory reads the memory file name into mem, which must be its size.
func (r *Reader) ReadMemory(name string, mem []byte) error {
	f, ok := r.byName[name]
	if !ok {
		return fmt.Errorf("snapshot %s: no %s in the manifest", r.dir, name)
	}
	if f.Size != int64(len(mem)) {
		return fmt.Errorf("snapshot %s: %s holds %d bytes of guest memory, the VM has %d", r.dir, name, f.Size, len(mem))
	}
	fd, err := os.Open(filepath.Join(r.dir, name))
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", r.dir, err)
	}
	defer fd.Close()
	// The file's data is read into mem, and its holes are made zero in
	// mem: what New wrote there (ACPI tables) the guest may have cleared.
	// A hole's whole pages are dropped (private anonymous memory reads
	// zeros again after MADV_DONTNEED) rather than written: most of a
	// guest's memory is holes, which then cost no reading and no page.
	next := int64(0)
	zeroTo := func(end int64) error {
		if end <= next {
			return nil
		}
		if err := unix.Madvise(mem[next:end], unix.MADV_DONTNEED); err != nil {
			clear(mem[next:end])
		}
		return nil
	}
	err = dataExtents(fd, f.Size, func(lo, hi int64) error {
		zeroTo(lo)
		if _, err := fd.ReadAt(mem[lo:hi], lo); err != nil && err != io.EOF {
			return err
		}
		next = hi
		return nil
	})
	if err == nil {
		err = zeroTo(f.Size)
	}
	if err != nil {
		return fmt.Errorf("snapshot %s: %s: %w", r.dir, name, err)
	}
	return nil
}
