package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/platform/config"
	"github.com/sluicehq/sluice/internal/provider/embedder"
)

// The outcomes of a doctor check.
const (
	checkOK   = "ok"
	checkFail = "FAIL"
	checkWarn = "warn"
)

// defaultCheckTimeout bounds each of doctor's checks, so that it answers
// within seconds even when every dependency is down.
const defaultCheckTimeout = 5 * time.Second

// check is the outcome of one of doctor's checks.
type check struct {
	// Name says what was checked, such as "postgres" or "stream INGEST".
	Name string `json:"check"`
	// Status is ok, FAIL or warn.
	Status string `json:"status"`
	// Detail says what was found and, unless Status is ok, what to do.
	Detail string `json:"detail"`
	// Setting is the environment variable to fix, when one is to blame.
	Setting string `json:"setting,omitempty"`
}

func okCheck(name, format string, args ...any) check {
	return check{Name: name, Status: checkOK, Detail: fmt.Sprintf(format, args...)}
}

func warnCheck(name, setting, format string, args ...any) check {
	return check{Name: name, Status: checkWarn, Setting: setting, Detail: fmt.Sprintf(format, args...)}
}

func failCheck(name, setting, format string, args ...any) check {
	return check{Name: name, Status: checkFail, Setting: setting, Detail: fmt.Sprintf(format, args...)}
}

// skipped is a check that could not run because what it needs is not
// there, which reason says.
func skipped(name, reason string) check {
	return warnCheck(name, "", "skipped: %s", reason)
}

// settingCheck is the FAIL of a *config.SettingError, or of err under
// setting when it is none.
func settingCheck(name, setting, value string, err error) check {
	if se, ok := errors.AsType[*config.SettingError](err); ok {
		return failCheck(name, se.Setting, "%s", se.Error())
	}
	return failCheck(name, setting, "%s %s: %v", setting, value, err)
}

// doctorReport is the JSON output of `sluice doctor`.
type doctorReport struct {
	OK     bool    `json:"ok"`
	Checks []check `json:"checks"`
}

// doctorOptions are the settings `sluice doctor` checks: the services'
// own.
type doctorOptions struct {
	conn
	embedder embedder.Settings
	timeout  time.Duration
}

func runDoctor(ctx context.Context, env Env, args []string) error {
	var o doctorOptions
	l := newLoader(env, "doctor", &o.conn, true)
	o.embedder.Register(l)
	l.Int(&o.EmbeddingDims, "embedding-dims", "EMBEDDING_DIMS", config.DefaultEmbeddingDims, "embedding vector dimension the services are configured with")
	l.Duration(&o.timeout, "check-timeout", "", defaultCheckTimeout, "bound of each check")
	rest, err := parse(l, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageErr("doctor takes no arguments, got %q", rest)
	}
	if o.timeout <= 0 {
		return usageErr("--check-timeout %s: use a positive duration such as 5s", o.timeout)
	}
	report := diagnose(ctx, o)
	if o.JSON {
		if err := printJSON(env.Stdout, report); err != nil {
			return err
		}
	} else {
		printChecks(env.Stdout, report.Checks)
	}
	if !report.OK {
		return &ExitError{Code: 1, Err: fmt.Errorf("%d of %d checks failed: fix the settings named above and run sluice doctor again", failures(report.Checks), len(report.Checks))}
	}
	return nil
}

// diagnose runs every check: PostgreSQL, NATS and the embedder side by
// side, so that one dependency's timeout does not add to another's; the
// embedder's dimension is then held against the schema's.
func diagnose(ctx context.Context, o doctorOptions) doctorReport {
	var (
		wg                         sync.WaitGroup
		pg                         postgresFindings
		natsChecks, embedderChecks []check
		probe                      embedderProbe
	)
	wg.Go(func() { pg = checkPostgres(ctx, o) })
	wg.Go(func() { natsChecks = checkNATS(ctx, o) })
	wg.Go(func() { probe, embedderChecks = checkEmbedder(ctx, o) })
	wg.Wait()
	checks := append(append(pg.checks, natsChecks...), embedderChecks...)
	checks = append(checks, checkDimsAgreement(o, pg, probe))
	return doctorReport{OK: failures(checks) == 0, Checks: checks}
}

func failures(checks []check) int {
	n := 0
	for _, c := range checks {
		if c.Status == checkFail {
			n++
		}
	}
	return n
}

func printChecks(w io.Writer, checks []check) {
	for _, c := range checks {
		fmt.Fprintf(w, "%-4s  %s: %s\n", c.Status, c.Name, c.Detail)
	}
}
