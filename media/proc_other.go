//go:build !unix

package media

import "os/exec"

// ownGroup: no process groups here; canceling kills ffmpeg itself.
func ownGroup(cmd *exec.Cmd) {}

// renice: priorities are left alone here.
func renice(pid, nice int) {}
