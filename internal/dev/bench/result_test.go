package bench

import (
	"maps"
	"testing"
)

// Each ceiling's CPU by process is the median of each process's share
// over its repetitions, and the four parts' sum by process adds them up.
func TestSetCeilingsSplitsCPUByProcess(t *testing.T) {
	reps := map[string][]ceilingRep{}
	for _, name := range ceilingNames {
		// Three repetitions whose middle values, per process, come from
		// different repetitions: a median of totals would not give them.
		reps[name] = []ceilingRep{
			{rate: 100, cpu: cpuUse{clients: 1, sim: 6, postgres: 2, nats: 9}},
			{rate: 300, cpu: cpuUse{clients: 3, sim: 4, postgres: 8, nats: 1}},
			{rate: 200, cpu: cpuUse{clients: 2, sim: 5, postgres: 5, nats: 5}},
		}
	}
	var r Report
	r.setCeilings(reps, 1000)
	want := map[string]float64{cpuClients: 2, cpuSim: 5, cpuPostgres: 5, cpuNATS: 5}
	for _, c := range r.Ceilings {
		if c.Median != 200 || c.CPUPer1k != 17 || !maps.Equal(c.CPUPer1kByProcess, want) {
			t.Errorf("%s: median %v/s, CPU %v, by process %v; want 200, 17 and %v", c.Name, c.Median, c.CPUPer1k, c.CPUPer1kByProcess, want)
		}
	}
	four := map[string]float64{cpuClients: 8, cpuSim: 20, cpuPostgres: 20, cpuNATS: 20}
	if r.PartsCPUPer1k != 51 || r.PartsCPUPer1kWithBookkeeping != 68 || !maps.Equal(r.PartsCPUPer1kByProcess, four) {
		t.Errorf("parts' CPU %v, with bookkeeping %v by process %v; want 51, 68 and %v",
			r.PartsCPUPer1k, r.PartsCPUPer1kWithBookkeeping, r.PartsCPUPer1kByProcess, four)
	}
	if r.DocsPartsCPUPer1k != 51 || r.DocsPartsCPUPer1kWithBookkeeping != 68 {
		t.Errorf("the parts' CPU over the documents' chunks %v, with bookkeeping %v; want 51 and 68", r.DocsPartsCPUPer1k, r.DocsPartsCPUPer1kWithBookkeeping)
	}

	delete(reps, ceilingBookkeeping)
	r.setCeilings(reps, 1000)
	if r.PartsCPUPer1kByProcess != nil || r.PartsCPUPer1kWithBookkeeping != 0 {
		t.Errorf("without bookkeeping: four parts by process %v, CPU %v; want none", r.PartsCPUPer1kByProcess, r.PartsCPUPer1kWithBookkeeping)
	}
}
