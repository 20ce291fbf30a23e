module github.com/govmm/govmm

go 1.26.8

require (
	golang.org/x/arch v0.33.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
