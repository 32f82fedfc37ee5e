//go:build !linux

package main

import (
	"os"
	"syscall"
)

// fdatasync makes f's bytes durable (a full fsync where there is no
// fdatasync). The harness reads /proc and is meant for Linux; this and
// childAttr only let it build elsewhere.
func fdatasync(f *os.File) error { return f.Sync() }

// childAttr: no parent-death signal outside Linux.
func childAttr() *syscall.SysProcAttr { return nil }

// syncAll: no machine-wide sync here.
func syncAll() {}

// clientCPU: not measured here (0).
func clientCPU() float64 { return 0 }
