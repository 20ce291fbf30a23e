package nested

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// moduleIndex maps a kernel module's name (as modinfo spells it: dashes
// become underscores) to its file under a Debian linux-image package's
// lib/modules/VERSION/kernel tree.
type moduleIndex map[string]string

// indexModules walks dir (lib/modules/VERSION) for .ko files. Debian's
// package ships no modules.dep (depmod makes it at install time, and
// nothing here is installed), so dependencies come from each module's own
// .modinfo section instead, as modinfo reads them.
func indexModules(dir string) (moduleIndex, error) {
	idx := moduleIndex{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".ko") {
			idx[moduleName(filepath.Base(p))] = p
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading kernel modules in %s: %w", dir, err)
	}
	if len(idx) == 0 {
		return nil, fmt.Errorf("no kernel modules (.ko) under %s", dir)
	}
	return idx, nil
}

// moduleName is the module name of a file name: kvm-amd.ko is kvm_amd.
func moduleName(file string) string {
	return strings.ReplaceAll(strings.TrimSuffix(file, ".ko"), "-", "_")
}

// modinfoDepends returns the depends= field of a module's .modinfo
// section: the modules the kernel requires loaded before it.
func modinfoDepends(path string) ([]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading module %s: %w", path, err)
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, fmt.Errorf("module %s has no .modinfo section", path)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("reading .modinfo of %s: %w", path, err)
	}
	return parseDepends(data), nil
}

// parseDepends finds "depends=a,b" among a .modinfo section's
// NUL-separated key=value strings.
func parseDepends(modinfo []byte) []string {
	for _, kv := range bytes.Split(modinfo, []byte{0}) {
		v, ok := bytes.CutPrefix(kv, []byte("depends="))
		if !ok {
			continue
		}
		var deps []string
		for _, d := range strings.Split(string(v), ",") {
			if d != "" {
				deps = append(deps, moduleName(d))
			}
		}
		return deps
	}
	return nil
}

// loadOrder returns the files of the named modules and everything they
// depend on, each after its dependencies and each once: the order insmod
// must load them in. depends reads one module's dependencies (modinfo in
// use, a map in tests).
func (idx moduleIndex) loadOrder(names []string, depends func(path string) ([]string, error)) ([]string, error) {
	var order []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name, from string) error
	visit = func(name, from string) error {
		switch state[name] {
		case 2:
			return nil
		case 1:
			return fmt.Errorf("kernel modules depend on each other in a cycle through %s", name)
		}
		path, ok := idx[name]
		if !ok {
			if from != "" {
				return fmt.Errorf("kernel module %s (needed by %s) is not in the kernel package", name, from)
			}
			return fmt.Errorf("kernel module %s is not in the kernel package", name)
		}
		state[name] = 1
		deps, err := depends(path)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := visit(d, name); err != nil {
				return err
			}
		}
		state[name] = 2
		order = append(order, path)
		return nil
	}
	for _, n := range names {
		if err := visit(moduleName(n), ""); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
