package embedsim

// TB is the part of testing.TB that StartTest uses. Taking it rather than
// testing.TB keeps the testing package out of the binaries that link
// embedsim (embed-sim, and the operator CLI through the fault drill).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Cleanup(func())
}

// StartTest starts a Server on a free loopback port for the duration of
// test t, recording input text (Config.RecordInputs is forced on), and
// closes it in t.Cleanup. It fails t if the server cannot start. It lives in
// a non-test file so that other packages' tests can use it.
func StartTest(t TB, cfg Config, opts ...Option) *Server {
	t.Helper()
	cfg.RecordInputs = true
	s, err := New(cfg, opts...)
	if err != nil {
		t.Fatalf("embedsim: %v", err)
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatalf("embedsim: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("embedsim: close: %v", err)
		}
	})
	return s
}
