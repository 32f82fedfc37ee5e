//go:build unix

package media

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// ownGroup starts cmd in a process group of its own and makes canceling
// it kill the whole group (ffmpeg's helpers too).
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// renice lowers the started process's priority to nice.
func renice(pid, nice int) {
	unix.Setpriority(unix.PRIO_PROCESS, pid, nice)
}
