package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of CPU times in /proc/<pid>/stat. Linux fixes it at
// 100 for user space whatever the kernel's internal tick.
const userHZ = 100

// procStat is the part of /proc/<pid>/stat the benchmark reads.
type procStat struct {
	comm  string
	ppid  int
	ticks uint64 // utime + stime + cutime + cstime
}

// readStat reads /proc/<pid>/stat. The command name is in parentheses and
// may itself contain spaces or parentheses, so fields are counted from the
// last ')'.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	s := string(b)
	open, closeAt := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closeAt < open {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[closeAt+1:])
	// After the command: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14).
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	st := procStat{comm: s[open+1 : closeAt]}
	st.ppid, _ = strconv.Atoi(f[1])
	for _, i := range []int{11, 12, 13, 14} {
		n, _ := strconv.ParseUint(f[i], 10, 64)
		st.ticks += n
	}
	return st, nil
}

// allStats reads every process's stat; processes that vanish meanwhile are
// skipped.
func allStats() map[int]procStat {
	out := map[int]procStat{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil {
			out[pid] = st
		}
	}
	return out
}

// infraCPU returns the CPU time used so far by this process's children
// whose command name starts with comm (the kernel cuts it at 15 bytes,
// so nats-server-v2.15.2 is "nats-server-v2.") and by their live children: PostgreSQL's postmaster and its
// backends, or the nats-server. Backends that have exited are counted in
// the postmaster's cutime once it has reaped them.
func infraCPU(comm string) time.Duration {
	stats := allStats()
	self := os.Getpid()
	var ticks uint64
	for pid, st := range stats {
		if st.ppid != self || !strings.HasPrefix(st.comm, comm) {
			continue
		}
		ticks += st.ticks
		for _, child := range stats {
			if child.ppid == pid {
				ticks += child.ticks
			}
		}
	}
	return time.Duration(ticks) * time.Second / userHZ
}

// vmHWM reads the peak resident set size of a live process, in KiB.
func vmHWM(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0, false
			}
			n, err := strconv.ParseInt(f[0], 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
