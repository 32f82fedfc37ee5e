package main

import (
	"os"
	"syscall"
)

// fdatasync makes f's bytes durable.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// childAttr makes a spawned server die with the harness.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

// syncAll writes every dirty page of the machine back (sync(2)).
func syncAll() { syscall.Sync() }

// clientCPU is the harness's own CPU time so far, in seconds.
func clientCPU() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
