package vmm

import "log/slog"

// log is the VM's logger (Config.Log).
func (vm *VM) log() *slog.Logger {
	if vm.cfg.Log != nil {
		return vm.cfg.Log
	}
	return slog.Default()
}
