//go:build tools

// Package initramfs pins what the u-root initramfs is built from: the u-root
// commands below (and u-root itself, a go.mod tool) at the version go.mod
// names. The Makefile's initramfs target builds them with 'go tool u-root'.
package initramfs

import (
	_ "github.com/u-root/u-root/cmds/core/cat"
	_ "github.com/u-root/u-root/cmds/core/dmesg"
	_ "github.com/u-root/u-root/cmds/core/echo"
	_ "github.com/u-root/u-root/cmds/core/gosh"
	_ "github.com/u-root/u-root/cmds/core/init"
	_ "github.com/u-root/u-root/cmds/core/ls"
	_ "github.com/u-root/u-root/cmds/core/shutdown"
)
