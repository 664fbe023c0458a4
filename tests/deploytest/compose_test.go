package deploytest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/sluicehq/sluice/internal/dev/catalog"
	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/ops/cli"
	"github.com/sluicehq/sluice/internal/platform/config"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/migrations"
)

// usageLine is one setting as config.Loader.PrintUsage prints it.
var usageLine = regexp.MustCompile(`(?m)^  --([a-z0-9-]+)(?: \(\$([A-Z0-9_]+)\))?\n.*\(default "(.*)"\)$`)

// settings returns what binary reads when run with args, from the code
// that parses them: the catalog, embed-sim's flag set, or the usage of the
// sluice command that args start with.
func settings(bin string, args []string) []config.Var {
	vars := catalog.Settings()[bin]
	switch bin {
	case "embed-sim":
		fs := flag.NewFlagSet(bin, flag.ContinueOnError)
		(&embedsim.ServiceConfig{}).Register(fs)
		fs.VisitAll(func(f *flag.Flag) { vars = append(vars, config.Var{Flag: f.Name, Default: f.DefValue}) })
	case "sluice":
		var usage bytes.Buffer
		words := slices.Clone(args)
		if i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "-") }); i >= 0 {
			words = words[:i]
		}
		cli.Run(context.Background(), cli.Env{Stdout: &usage, Stderr: &usage}, append(slices.Clone(words), "--help"))
		for _, m := range usageLine.FindAllStringSubmatch(usage.String(), -1) {
			vars = append(vars, config.Var{Flag: m[1], Env: m[2], Default: m[3]})
		}
	}
	return vars
}

// toolCommands are the commands an operator runs through a service whose
// entrypoint is sluice (docker compose run --rm sluice search …) besides
// its default command: its environment carries their settings too.
var toolCommands = [][]string{{"search"}}

// serviceSettings returns what a service's binary reads, with the
// settings of toolCommands for a service whose entrypoint is sluice.
func serviceSettings(s types.ServiceConfig) []config.Var {
	bin, args := binary(s)
	vars := settings(bin, args)
	if len(s.Entrypoint) > 0 && filepath.Base(s.Entrypoint[0]) == "sluice" {
		for _, c := range toolCommands {
			vars = append(vars, settings("sluice", c)...)
		}
	}
	return vars
}

// binary returns the binary a service runs and its arguments; the image
// sets no ENTRYPOINT, so the first word names the binary.
func binary(s types.ServiceConfig) (string, []string) {
	argv := append(slices.Clone(s.Entrypoint), s.Command...)
	if len(argv) == 0 {
		return "", nil
	}
	return filepath.Base(argv[0]), argv[1:]
}

func env(s types.ServiceConfig, name string) string {
	if v := s.Environment[name]; v != nil {
		return *v
	}
	return ""
}

func health(s types.ServiceConfig) string {
	if s.HealthCheck == nil {
		return ""
	}
	return strings.Join(s.HealthCheck.Test, " ")
}

// parseURL parses raw, or returns an empty URL.
func parseURL(raw string) *url.URL {
	if u, err := url.Parse(strings.TrimSpace(raw)); err == nil {
		return u
	}
	return &url.URL{}
}

// flagValue returns the value of --name in args.
func flagValue(args []string, name string) string {
	if i := slices.Index(args, "--"+name); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// services returns, sorted, the services that match.
func (d *deployment) services(match func(s types.ServiceConfig, bin string) bool) []string {
	var names []string
	for name, s := range d.Services {
		if bin, _ := binary(s); match(s, bin) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// ours matches the services of this repository's image.
func ours(s types.ServiceConfig, _ string) bool { return s.Build != nil }

// mountSource returns the repository path bound at target in service.
func (d *deployment) mountSource(service, target string) string {
	for _, v := range d.Services[service].Volumes {
		if v.Target == target && v.Type == types.VolumeTypeBind {
			rel, _ := filepath.Rel(d.WorkingDir, v.Source)
			return rel
		}
	}
	return ""
}

// checkSettings holds each service of the image to the settings its binary
// reads, and to setting each one that defaults to loopback, which inside a
// container is the container itself.
func checkSettings(d *deployment) (problems []string) {
	for _, name := range d.services(ours) {
		s := d.Services[name]
		bin, args := binary(s)
		vars := serviceSettings(s)
		if _, err := os.Stat(filepath.Join(repoRoot, "cmd", bin)); err != nil || len(vars) == 0 {
			problems = append(problems, fmt.Sprintf("%s runs %q, which is not a command in cmd/ with settings known to internal/dev/catalog", name, bin))
		}
		has := func(f func(v config.Var) bool) bool { return slices.ContainsFunc(vars, f) }
		for _, a := range args {
			if f, ok := strings.CutPrefix(a, "--"); ok && !has(func(v config.Var) bool { return v.Flag == f }) {
				problems = append(problems, fmt.Sprintf("%s passes --%s, which %s does not define", name, f, bin))
			}
		}
		for e := range s.Environment {
			if !has(func(v config.Var) bool { return v.Env == e }) {
				problems = append(problems, fmt.Sprintf("%s sets %s, which %s does not read", name, e, bin))
			}
		}
		for _, v := range vars {
			_, set := s.Environment[v.Env]
			set = set || slices.Contains(args, "--"+v.Flag) || v.Env == "DATABASE_URL" && s.Environment["MIGRATE_DATABASE_URL"] != nil
			if strings.Contains(v.Default, "127.0.0.1") && !set {
				problems = append(problems, fmt.Sprintf("%s leaves %s (--%s) at %q, which inside its container is the container itself", name, v.Env, v.Flag, v.Default))
			}
		}
	}
	return problems
}

// checkServing holds every long-running service of the image to one port:
// the one it listens on beyond loopback, its healthcheck asks, and
// Prometheus scrapes.
func checkServing(d *deployment) (problems []string) {
	targets := scrapeTargets(d)
	// One-shots and the CLI serve no metrics.
	for _, name := range d.services(func(s types.ServiceConfig, bin string) bool {
		return s.Build != nil && bin != "sluice" && s.Restart != "no"
	}) {
		s := d.Services[name]
		addr := env(s, "METRICS_ADDR")
		if bin, args := binary(s); bin == "embed-sim" {
			addr = flagValue(args, "addr")
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host == "localhost" || net.ParseIP(host).IsLoopback() {
			problems = append(problems, fmt.Sprintf("%s listens on %q: set METRICS_ADDR (embed-sim: --addr) to :PORT", name, addr))
		}
		if !strings.Contains(health(s), ":"+port+"/healthz") {
			problems = append(problems, fmt.Sprintf("%s's healthcheck %q does not ask port %s, where it listens", name, health(s), port))
		}
		if !targets[name+":"+port] {
			problems = append(problems, fmt.Sprintf("prometheus does not scrape %s on port %s, where it serves /metrics", name, port))
		}
	}
	return problems
}

// images are the Dockerfile's targets by the image they are tagged as
// (test-deploy.sh tags its local builds the same): the product, and the
// simulator apart from it.
var images = map[string]string{"sluice": "sluice", "embed-sim": "sluice-embed-sim"}

// checkImages holds each service of the repository's images to the
// Dockerfile target that holds its binary: embed-sim to its own image,
// every other to the product's, which holds no simulator.
func checkImages(d *deployment) (problems []string) {
	for _, name := range d.services(ours) {
		s := d.Services[name]
		bin, _ := binary(s)
		target := "sluice"
		if bin == "embed-sim" {
			target = "embed-sim"
		}
		if s.Build.Target != target {
			problems = append(problems, fmt.Sprintf("%s runs %s from the Dockerfile's target %q: build target %q, the image that holds it", name, bin, s.Build.Target, target))
		}
		if repo, _, _ := strings.Cut(s.Image, ":"); repo != images[target] {
			problems = append(problems, fmt.Sprintf("%s is image %q, built from target %q: name it %s:${SLUICE_TAG:-dev}, as test-deploy.sh tags it", name, s.Image, s.Build.Target, images[target]))
		}
	}
	return problems
}

// checkEmbedder requires the consumer and the replayer to default to
// embed-sim on its port, and a real provider to be one variable away.
func checkEmbedder(d *deployment) (problems []string) {
	_, simArgs := binary(d.Services["embed-sim"])
	_, simPort, _ := net.SplitHostPort(flagValue(simArgs, "addr"))
	provider := map[string]string{"EMBEDDER_URL": "https://provider.example/v1", "EMBEDDER_MODEL": "m", "EMBEDDER_API_KEY": "k"}
	p, err := d.compose(provider)
	if err != nil {
		return []string{err.Error()}
	}
	for _, name := range []string{"consumer", "dlq-replayer"} {
		if u := parseURL(env(d.Services[name], "EMBEDDER_URL")); u.Hostname() != "embed-sim" || u.Port() != simPort {
			problems = append(problems, fmt.Sprintf("%s: EMBEDDER_URL %q, want embed-sim on the port it listens on (%s)", name, env(d.Services[name], "EMBEDDER_URL"), simPort))
		}
		for k, v := range provider {
			if got := env(p.Services[name], k); got != v {
				problems = append(problems, fmt.Sprintf("%s: %s=%s gives it %q: interpolate ${%s:-…}", name, k, v, got, k))
			}
		}
	}
	return problems
}

// checkEmbeddingModel holds every service that reads a setting of the
// embedding model (its name, which the producer's tokenizer follows too,
// its dimension, its encoding and whether the dimension is sent) to take it from the one place the
// compose file gives it, which .env or the environment sets: a service
// left at its default would chunk or embed for another model.
func checkEmbeddingModel(d *deployment) (problems []string) {
	model := map[string]string{"EMBEDDER_MODEL": "text-embedding-3-small", "EMBEDDING_DIMS": "1536", "EMBEDDER_ENCODING": "float", "EMBEDDER_SEND_DIMS": "false"}
	p, err := d.compose(model)
	if err != nil {
		return []string{err.Error()}
	}
	for _, name := range d.services(ours) {
		reads := serviceSettings(d.Services[name])
		for k, v := range model {
			if !slices.ContainsFunc(reads, func(r config.Var) bool { return r.Env == k }) {
				continue
			}
			if got := env(p.Services[name], k); got != v {
				problems = append(problems, fmt.Sprintf("%s reads %s, but %s=%s in .env gives it %q: set it from x-embedder (or x-common-env)", name, k, k, v, got))
			}
		}
	}
	return problems
}

// checkSharedSettings holds the consumer and the replayer to the same
// pipeline settings, and every service to embed-sim's dimension.
func checkSharedSettings(d *deployment) (problems []string) {
	cons, repl := d.Services["consumer"], d.Services["dlq-replayer"]
	for _, v := range settings("dlq-replayer", nil) {
		perService := v.Env == "METRICS_ADDR" || v.Env == "NATS_URL" || v.Env == "DATABASE_URL"
		if a, b := env(cons, v.Env), env(repl, v.Env); a != b && cons.Environment[v.Env] != nil && !perService {
			problems = append(problems, fmt.Sprintf("%s is %q on consumer but %q on dlq-replayer: the pipeline settings must agree", v.Env, a, b))
		}
	}
	_, simArgs := binary(d.Services["embed-sim"])
	for name, s := range d.Services {
		if v, ok := s.Environment["EMBEDDING_DIMS"]; ok && *v != flagValue(simArgs, "dims") {
			problems = append(problems, fmt.Sprintf("%s has EMBEDDING_DIMS=%s but embed-sim serves --dims %s", name, *v, flagValue(simArgs, "dims")))
		}
	}
	return problems
}

// checkPrivilege holds every service to its own NATS user, with the
// password the servers are given, and to PostgreSQL's runtime role; only
// migrate connects as the schema owner.
func checkPrivilege(d *deployment) (problems []string) {
	for _, name := range d.services(ours) {
		s := d.Services[name]
		bin, args := binary(s)
		cmd := strings.Join(append([]string{bin}, args...), " ")
		role, err := natsauth.ForBinary(bin)
		switch {
		case strings.HasPrefix(cmd, "sluice nats "):
			role = natsauth.Owner
		case cmd == "sluice console":
			role = natsauth.Console
		}
		for _, raw := range strings.Split(env(s, "NATS_URL"), ",") {
			u := parseURL(raw)
			pw, _ := u.User.Password()
			switch {
			case err != nil || strings.HasPrefix(cmd, "sluice migrate "):
			case u.User.Username() != string(role):
				problems = append(problems, fmt.Sprintf("%s connects to NATS as %q, want its own role %q", name, u.User.Username(), role))
			case pw != env(d.Services["nats"], role.PasswordVar()):
				problems = append(problems, fmt.Sprintf("%s: NATS password for %s differs from the servers' %s", name, role, role.PasswordVar()))
			}
		}
		if raw, ok := s.Environment["DATABASE_URL"]; ok {
			problems = append(problems, checkDatabaseRole(d, name, cmd, *raw)...)
		}
	}
	return problems
}

// checkDatabaseRole holds a service's DATABASE_URL to its own PostgreSQL
// role (migrations.RoleForBinary), with the password the migrate service
// gives that role.
func checkDatabaseRole(d *deployment, name, cmd, raw string) []string {
	bin, _, _ := strings.Cut(cmd, " ")
	if cmd == "sluice console" {
		bin = cmd
	}
	want, err := migrations.RoleForBinary(bin)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", name, err)}
	}
	u := parseURL(raw)
	if u.User.Username() != want {
		return []string{fmt.Sprintf("%s: DATABASE_URL must connect as %s, its own role, not %q", name, want, u.User.Username())}
	}
	for _, role := range migrations.Roles {
		pw, _ := u.User.Password()
		if role.Name == want && pw != env(d.Services["migrate"], role.PasswordEnv) {
			return []string{fmt.Sprintf("%s: PostgreSQL password for %s differs from the one migrate sets (%s)", name, want, role.PasswordEnv)}
		}
	}
	return nil
}

// checkNATS holds every server to the shipped configuration, the users'
// passwords, JetStream health and a store and name of its own; in a
// cluster, every client to every node, and streams to one replica a node.
func checkNATS(d *deployment) (problems []string) {
	nodes := d.services(func(_ types.ServiceConfig, bin string) bool { return bin == "nats-server" })
	names, stores := map[string]bool{}, map[string]bool{}
	for _, node := range nodes {
		s := d.Services[node]
		_, args := binary(s)
		if src := d.mountSource(node, "/etc/nats/nats.conf"); src != natsauth.ShippedPath {
			problems = append(problems, fmt.Sprintf("%s mounts %q at /etc/nats/nats.conf, want %s", node, src, natsauth.ShippedPath))
		}
		for _, role := range natsauth.Roles() {
			if v := env(s, role.PasswordVar()); v == "" || v != env(d.Services["nats"], role.PasswordVar()) {
				problems = append(problems, fmt.Sprintf("%s: %s is unset or not the other nodes'; the server refuses to start without it", node, role.PasswordVar()))
			}
		}
		if !strings.Contains(health(s), ":8222/healthz?js-enabled-only=true") {
			problems = append(problems, node+": check health on :8222/healthz?js-enabled-only=true, so that dependents wait for JetStream")
		}
		store := slices.IndexFunc(s.Volumes, func(v types.ServiceVolumeConfig) bool {
			return v.Target == flagValue(args, "store_dir") && v.Type == types.VolumeTypeVolume
		})
		if store < 0 || stores[s.Volumes[store].Source] {
			problems = append(problems, fmt.Sprintf("%s: put the --store_dir on a named volume of its own, not another node's", node))
		} else {
			stores[s.Volumes[store].Source] = true
		}
		if name := flagValue(args, "server_name"); name == "" || names[name] {
			problems = append(problems, fmt.Sprintf("%s: --server_name %q must be set and differ from the other nodes'", node, name))
		}
		names[flagValue(args, "server_name")] = true
	}
	if len(nodes) == 1 {
		return problems
	}
	for name, s := range d.Services {
		var hosts []string
		for _, raw := range strings.Split(env(s, "NATS_URL"), ",") {
			hosts = append(hosts, strings.TrimSuffix(parseURL(raw).Host, ":4222"))
		}
		if slices.Sort(hosts); s.Environment["NATS_URL"] != nil && !slices.Equal(hosts, nodes) {
			problems = append(problems, fmt.Sprintf("%s: NATS_URL %q, want every node (%s)", name, env(s, "NATS_URL"), strings.Join(nodes, ", ")))
		}
	}
	if r := env(d.Services["nats-setup"], "STREAM_REPLICAS"); r != fmt.Sprint(len(nodes)) {
		problems = append(problems, fmt.Sprintf("nats-setup: STREAM_REPLICAS %q, want %d, one replica a node", r, len(nodes)))
	}
	return problems
}

// checkBindMounts requires every bind mount's source to exist: Docker
// would mount an empty directory in its place.
func checkBindMounts(d *deployment) (problems []string) {
	for name, s := range d.Services {
		for _, v := range s.Volumes {
			if _, err := os.Stat(v.Source); v.Type == types.VolumeTypeBind && err != nil {
				problems = append(problems, fmt.Sprintf("%s mounts %s, which does not exist", name, v.Source))
			}
		}
	}
	return problems
}

// unsafeMonitoringFlags let anyone who reaches a monitoring service
// change it: Prometheus's lifecycle endpoint shuts it down or reloads it,
// its admin API deletes series.
var unsafeMonitoringFlags = []string{"--web.enable-lifecycle", "--web.enable-admin-api"}

// checkMonitoring refuses a monitoring service that can be changed or
// stopped through its HTTP port.
func checkMonitoring(d *deployment) (problems []string) {
	for name, s := range d.Services {
		for _, arg := range append(slices.Clone(s.Entrypoint), s.Command...) {
			if slices.Contains(unsafeMonitoringFlags, strings.SplitN(arg, "=", 2)[0]) {
				problems = append(problems, fmt.Sprintf("%s runs with %s: drop it, anyone who reaches the port could stop or rewrite it", name, arg))
			}
		}
	}
	return problems
}

// passwordDefault matches a compose interpolation of a password with its
// fall-back, ${NAME_PASSWORD:-default}.
var passwordDefault = regexp.MustCompile(`\$\{([A-Z0-9_]*PASSWORD):-([^}]*)\}`)

// passwordVars returns every password variable the compose text names.
func passwordVars(text string) []string {
	var vars []string
	for _, m := range passwordDefault.FindAllStringSubmatch(text, -1) {
		if !slices.Contains(vars, m[1]) {
			vars = append(vars, m[1])
		}
	}
	return vars
}

// checkPasswordDefaults requires every password the compose files fall
// back to to be one the services refuse outside a demo
// (config.ShippedPasswords), so that a stack started without .env never
// runs on a guessable password by accident.
func checkPasswordDefaults(d *deployment) (problems []string) {
	for _, f := range d.stack {
		for _, m := range passwordDefault.FindAllStringSubmatch(d.files[f], -1) {
			if !slices.Contains(config.ShippedPasswords, m[2]) {
				problems = append(problems, fmt.Sprintf("%s: %s falls back to %q, which config.ShippedPasswords does not list, so services would accept it outside a demo", f, m[1], m[2]))
			}
		}
	}
	return problems
}

// monitoringFlags would bind nats-server's monitoring port on every
// interface, where the shipped configuration binds it to loopback.
var monitoringFlags = []string{"-m", "--http_port", "-ms", "--https_port"}

// checkNATSMonitoring keeps every server's monitoring on its own
// loopback, as the shipped configuration sets it (natsauth.ShippedMonitor):
// no command-line port that would widen it.
func checkNATSMonitoring(d *deployment) (problems []string) {
	for name, s := range d.Services {
		bin, args := binary(s)
		if bin != "nats-server" {
			continue
		}
		for _, a := range args {
			if slices.Contains(monitoringFlags, strings.SplitN(a, "=", 2)[0]) {
				problems = append(problems, fmt.Sprintf("%s passes %s: it would serve monitoring on every interface; the shipped nats.conf serves it on %s", name, a, natsauth.ShippedMonitor))
			}
		}
	}
	return problems
}
