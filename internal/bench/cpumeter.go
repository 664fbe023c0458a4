package bench

import (
	"syscall"
	"time"
)

// cpuMeter measures the CPU time of an in-process measurement: this
// process's own (the ceilings' clients run here), PostgreSQL's and NATS's.
// Children started meanwhile are measured by their own rusage instead.
type cpuMeter struct {
	self, pg, nats time.Duration
}

func readCPU() cpuMeter {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	self := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return cpuMeter{self: self, pg: infraCPU("postgres"), nats: infraCPU("nats-server")}
}

// since returns the CPU seconds used since m, all three summed.
func (m cpuMeter) since() float64 {
	now := readCPU()
	return (now.self - m.self + now.pg - m.pg + now.nats - m.nats).Seconds()
}
