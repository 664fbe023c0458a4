package stack

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
)

// stateFile is the file under the stack's directory that holds its state.
const stateFile = "stack.json"

// state is what a stack keeps between `up`s: the ports and passwords the
// clients were told, the embedder the index was made for, and the
// processes running now.
type state struct {
	PostgresPort int                      `json:"postgres_port"`
	NATSPort     int                      `json:"nats_port"`
	SimPort      int                      `json:"sim_port"`
	MetricsPorts map[string]int           `json:"metrics_ports"`
	Passwords    map[natsauth.Role]string `json:"nats_passwords"`
	Embedder     Embedder                 `json:"embedder"`
	// PIDs are the running processes, by name, in start order.
	PIDs []proc `json:"pids,omitempty"`
}

// proc is one detached process of the stack.
type proc struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
}

// loadState reads dir's state; ok is false when dir holds no stack yet.
func loadState(dir string) (st *state, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	st = &state{}
	if err := json.Unmarshal(b, st); err != nil {
		return nil, false, fmt.Errorf("%s: %w (remove the directory to start afresh)", filepath.Join(dir, stateFile), err)
	}
	return st, true, nil
}

// newState picks free ports and fresh passwords for a new stack.
func newState(e Embedder) (*state, error) {
	st := &state{MetricsPorts: map[string]int{}, Passwords: map[natsauth.Role]string{}, Embedder: e}
	ports := []*int{&st.PostgresPort, &st.NATSPort, &st.SimPort}
	for range services {
		ports = append(ports, new(int))
	}
	for _, p := range ports {
		port, err := localenv.FreePort()
		if err != nil {
			return nil, err
		}
		*p = port
	}
	for i, svc := range services {
		st.MetricsPorts[svc] = *ports[3+i]
	}
	for _, r := range natsauth.Roles() {
		st.Passwords[r] = randomPassword()
	}
	return st, nil
}

// save writes the state, readable by its owner only: it holds passwords.
func (st *state) save(dir string) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, stateFile), append(b, '\n'), 0o600)
}

// running lists the recorded processes still alive.
func (st *state) running() []proc {
	var alive []proc
	for _, p := range st.PIDs {
		if localenv.Alive(p.PID) {
			alive = append(alive, p)
		}
	}
	return alive
}
