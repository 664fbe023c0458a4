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

// since returns the CPU used since m, by process.
func (m cpuMeter) since() cpuUse {
	now := readCPU()
	return cpuUse{clients: (now.self - m.self).Seconds(), postgres: (now.pg - m.pg).Seconds(), nats: (now.nats - m.nats).Seconds()}
}

// cpuUse is the CPU seconds one measurement spent, by process.
type cpuUse struct {
	// clients is this process's: the ceilings' clients, which run the
	// same Sluice code the producer and consumers run in a pipeline.
	clients float64
	// sim, postgres and nats are the servers': embed-sim, PostgreSQL and
	// NATS.
	sim, postgres, nats float64
}

// The keys of a ceiling's CPU by process (CeilingResult.CPUPer1kByProcess);
// PostgreSQL and NATS have a run's keys, cpuPostgres and cpuNATS.
const (
	cpuClients = "clients"
	cpuSim     = "embed-sim"
)

// total is the CPU seconds of every process.
func (u cpuUse) total() float64 { return u.clients + u.sim + u.postgres + u.nats }

// per1k is u per 1,000 of items, by process key.
func (u cpuUse) per1k(items int) map[string]float64 {
	k := 1000 / float64(items)
	return map[string]float64{cpuClients: u.clients * k, cpuSim: u.sim * k, cpuPostgres: u.postgres * k, cpuNATS: u.nats * k}
}
