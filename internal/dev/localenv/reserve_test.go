package localenv

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// reserveChildEnv makes this test binary a child that hands out a port,
// prints it and waits for its stdin to close.
const reserveChildEnv = "SLUICE_TEST_RESERVE_CHILD"

// A port another process handed out is not handed out here while that
// process lives, and is once it has exited.
func TestAPortHandedOutElsewhereIsPassedOver(t *testing.T) {
	if os.Getenv(reserveChildEnv) != "" {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println(port)
		_, _ = bufio.NewReader(os.Stdin).ReadByte() // until the parent lets go
		return
	}
	t.Parallel()
	child := exec.Command(os.Args[0], "-test.run=^TestAPortHandedOutElsewhereIsPassedOver$")
	child.Env = append(os.Environ(), reserveChildEnv+"=1")
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the child printed no port: %v", err)
	}
	port, err := strconv.Atoi(line[:len(line)-1])
	if err != nil {
		t.Fatalf("the child printed %q, want a port", line)
	}
	if reserveLocked(port) {
		t.Fatalf("port %d, handed out by a live process, reserved here too", port)
	}
	_ = stdin.Close()
	if err := child.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	if !reserveLocked(port) {
		t.Errorf("port %d still reserved once the process that handed it out exited", port)
	}
}

func reserveLocked(port int) bool {
	handedOut.Lock()
	defer handedOut.Unlock()
	return reserve(port)
}
