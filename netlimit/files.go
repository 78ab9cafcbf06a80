package netlimit

import "syscall"

// FDReserve is the descriptors kept for what is not a client connection:
// the source's files, the API server, listeners, logs.
const FDReserve = 128

// FitOpenFiles is max lowered to what the process's open-file limit leaves
// after FDReserve (past it accept fails, which no client can tell from a
// dead server), and whether it was lowered. A max of zero or less (no
// bound) is lowered too.
func FitOpenFiles(max int) (int, bool) {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) != nil || rl.Cur >= 1<<30 {
		return max, false
	}
	if fit := int(rl.Cur) - FDReserve; fit > 0 && (max <= 0 || fit < max) {
		return fit, true
	}
	return max, false
}
