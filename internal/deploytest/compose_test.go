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
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/internal/catalog"
	"github.com/sluicehq/sluice/internal/cli"
	"github.com/sluicehq/sluice/internal/embedsim"
)

// repoRoot is where the deployment files live, relative to this package.
const repoRoot = "../.."

// requiredServices are the services docker-compose.yml must define.
var requiredServices = []string{"nats", "postgres", "migrate", "producer", "consumer",
	"outbox-relay", "dlq-replayer", "embed-sim", "prometheus", "grafana"}

// project is docker-compose.yml twice: as written, and with ${VAR}
// interpolated from an empty environment, which is what `docker compose up`
// runs with no variables set.
type project struct {
	raw, file composeFile
}

type composeFile struct {
	Services map[string]service `yaml:"services"`
	Volumes  map[string]any     `yaml:"volumes"`
}

type service struct {
	Image       string       `yaml:"image"`
	Build       *buildSpec   `yaml:"build"`
	Entrypoint  stringList   `yaml:"entrypoint"`
	Command     stringList   `yaml:"command"`
	Environment environment  `yaml:"environment"`
	Healthcheck *healthcheck `yaml:"healthcheck"`
	Ports       []portSpec   `yaml:"ports"`
	Volumes     []volumeSpec `yaml:"volumes"`
	Restart     string       `yaml:"restart"`
	Profiles    []string     `yaml:"profiles"`
}

// argv is what the container runs: entrypoint, then command. The image
// sets no ENTRYPOINT, so the first word names the binary.
func (s service) argv() []string { return append(slices.Clone(s.Entrypoint), s.Command...) }

// oneShot reports whether the service is meant to run to completion.
func (s service) oneShot() bool { return s.Restart == "no" }

type buildSpec struct{ Context, Dockerfile string }

func (b *buildSpec) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		b.Context = n.Value
		return nil
	}
	var m struct{ Context, Dockerfile string }
	err := n.Decode(&m)
	b.Context, b.Dockerfile = m.Context, m.Dockerfile
	return err
}

// stringList is a command: compose takes a list or a string.
type stringList []string

func (l *stringList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = strings.Fields(n.Value)
		return nil
	}
	var s []string
	err := n.Decode(&s)
	*l = s
	return err
}

// environment maps each variable to its value; compose takes a map or a
// list of NAME=value.
type environment map[string]string

func (e *environment) UnmarshalYAML(n *yaml.Node) error {
	*e = environment{}
	if n.Kind == yaml.SequenceNode {
		var items []string
		if err := n.Decode(&items); err != nil {
			return err
		}
		for _, it := range items {
			k, v, _ := strings.Cut(it, "=")
			(*e)[k] = v
		}
		return nil
	}
	var m map[string]*string
	if err := n.Decode(&m); err != nil {
		return err
	}
	for k, v := range m {
		(*e)[k] = ""
		if v != nil {
			(*e)[k] = *v
		}
	}
	return nil
}

type healthcheck struct {
	Test    stringList `yaml:"test"`
	Disable bool       `yaml:"disable"`
}

// url returns the first http URL of the healthcheck command.
func (h *healthcheck) url() string {
	if h == nil {
		return ""
	}
	for _, w := range h.Test {
		if strings.HasPrefix(w, "http://") {
			return w
		}
	}
	return ""
}

// portSpec is a port mapping: "[host_ip:][published:]target[/proto]" or the
// long syntax.
type portSpec struct{ Published, Target string }

func (p *portSpec) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		parts := strings.Split(strings.SplitN(n.Value, "/", 2)[0], ":")
		p.Target = parts[len(parts)-1]
		if len(parts) > 1 {
			p.Published = parts[len(parts)-2]
		}
		return nil
	}
	var m struct{ Published, Target string }
	err := n.Decode(&m)
	p.Published, p.Target = m.Published, m.Target
	return err
}

// volumeSpec is a mount: "source:target[:mode]" or the long syntax.
type volumeSpec struct{ Source, Target string }

func (v *volumeSpec) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		parts := strings.Split(n.Value, ":")
		v.Target = parts[0]
		if len(parts) > 1 {
			v.Source, v.Target = parts[0], parts[1]
		}
		return nil
	}
	var m struct{ Source, Target string }
	err := n.Decode(&m)
	v.Source, v.Target = m.Source, m.Target
	return err
}

// bind reports whether the mount is a host path rather than a volume.
func (v volumeSpec) bind() bool {
	return strings.HasPrefix(v.Source, ".") || strings.HasPrefix(v.Source, "/") || strings.HasPrefix(v.Source, "~")
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// loadProject reads docker-compose.yml.
func loadProject(t *testing.T) *project {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := parseProject(data)
	if err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return p
}

func parseProject(data []byte) (*project, error) {
	var p project
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if err := doc.Decode(&p.raw); err != nil {
		return nil, err
	}
	if err := interpolateNode(&doc, map[*yaml.Node]bool{}); err != nil {
		return nil, err
	}
	if err := doc.Decode(&p.file); err != nil {
		return nil, err
	}
	if len(p.file.Services) == 0 {
		return nil, fmt.Errorf("no services")
	}
	return &p, nil
}

// interpolateNode replaces ${VAR}, ${VAR:-default} and ${VAR-default} in
// every value (not key) with what an empty environment gives, as compose
// does; $$ is a literal $.
func interpolateNode(n *yaml.Node, seen map[*yaml.Node]bool) error {
	if seen[n] {
		return nil
	}
	seen[n] = true
	switch n.Kind {
	case yaml.ScalarNode:
		v, err := interpolate(n.Value)
		n.Value = v
		return err
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			if err := interpolateNode(n.Content[i], seen); err != nil {
				return err
			}
		}
	case yaml.AliasNode:
		return interpolateNode(n.Alias, seen)
	default:
		for _, c := range n.Content {
			if err := interpolateNode(c, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

var interpolation = regexp.MustCompile(`\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

func interpolate(s string) (string, error) {
	var err error
	out := interpolation.ReplaceAllStringFunc(s, func(m string) string {
		sub := interpolation.FindStringSubmatch(m)
		switch {
		case m == "$$":
			return "$"
		case strings.HasSuffix(sub[2], "-"):
			return sub[3]
		case strings.HasSuffix(sub[2], "?"):
			err = fmt.Errorf("%s requires a variable to be set", m)
		}
		return "" // unset, or ${VAR:+alt} of an unset VAR
	})
	return out, err
}

// settings are the flags and environment variables a binary reads.
type settings struct {
	flags, env map[string]bool
	defaults   map[string]string // by environment variable
}

// binarySettings returns what binary reads when run with args, from the
// code that parses them.
func binarySettings(binary string, args []string) (settings, error) {
	s := settings{flags: map[string]bool{}, env: map[string]bool{}, defaults: map[string]string{}}
	if vars, ok := catalog.Settings()[binary]; ok {
		for _, v := range vars {
			s.flags[v.Flag] = true
			if v.Env != "" {
				s.env[v.Env] = true
				s.defaults[v.Env] = v.Default
			}
		}
		return s, nil
	}
	switch binary {
	case "embed-sim":
		fs := flag.NewFlagSet(binary, flag.ContinueOnError)
		(&embedsim.Flags{}).Register(fs)
		fs.VisitAll(func(f *flag.Flag) { s.flags[f.Name] = true })
		return s, nil
	case "sluice":
		return cliSettings(args)
	}
	return s, fmt.Errorf("no settings known for binary %q: list it in internal/catalog", binary)
}

var usageLine = regexp.MustCompile(`(?m)^  --([a-z0-9-]+)(?: \(\$([A-Z0-9_]+)\))?$`)

// cliSettings asks the sluice CLI for the usage of the command that args
// start with (its words before the first flag).
func cliSettings(args []string) (settings, error) {
	s := settings{flags: map[string]bool{}, env: map[string]bool{}, defaults: map[string]string{}}
	words := args
	if i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "-") }); i >= 0 {
		words = args[:i]
	}
	var stdout, stderr bytes.Buffer
	cli.Run(context.Background(), cli.Env{Stdout: &stdout, Stderr: &stderr}, append(slices.Clone(words), "--help"))
	for _, m := range usageLine.FindAllStringSubmatch(stderr.String(), -1) {
		s.flags[m[1]] = true
		if m[2] != "" {
			s.env[m[2]] = true
		}
	}
	if len(s.flags) == 0 {
		return s, fmt.Errorf("sluice %s --help lists no flags:\n%s", strings.Join(words, " "), stderr.String())
	}
	return s, nil
}

// flagNames returns the names of the flags in args, up to a "--".
func flagNames(args []string) []string {
	var names []string
	for _, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			names = append(names, name)
		}
	}
	return names
}

// flagValue returns the value of --name in args.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		for _, prefix := range []string{"--" + name, "-" + name} {
			if a == prefix && i+1 < len(args) {
				return args[i+1], true
			}
			if v, ok := strings.CutPrefix(a, prefix+"="); ok {
				return v, true
			}
		}
	}
	return "", false
}

// sluiceServices are the services that run a binary of this repository:
// those built from its Dockerfile.
func (p *project) sluiceServices() []string {
	var names []string
	for name, s := range p.file.Services {
		if s.Build != nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// binary returns the binary a service runs and its arguments.
func (p *project) binary(name string) (string, []string) {
	argv := p.file.Services[name].argv()
	if len(argv) == 0 {
		return "", nil
	}
	return filepath.Base(argv[0]), argv[1:]
}

// listenPort returns the port a sluice service serves /healthz and
// /metrics on, from METRICS_ADDR or embed-sim's --addr.
func (p *project) listenPort(name string) string {
	addr := p.file.Services[name].Environment["METRICS_ADDR"]
	if bin, args := p.binary(name); bin == "embed-sim" {
		addr, _ = flagValue(args, "addr")
	}
	if i := strings.LastIndex(addr, ":"); i >= 0 {
		return addr[i+1:]
	}
	return ""
}

// effective returns the value of an environment variable inside the
// container: as set, or the binary's default.
func (p *project) effective(name, env string) string {
	if v, ok := p.file.Services[name].Environment[env]; ok {
		return v
	}
	bin, args := p.binary(name)
	s, _ := binarySettings(bin, args)
	return s.defaults[env]
}

type check struct {
	name string
	fn   func(p *project) []string
}

var composeChecks = []check{
	{"required services", checkRequiredServices},
	{"settings exist in the binaries", checkSettings},
	{"nats", checkNATS},
	{"images pinned", checkImages},
	{"metrics reachable", checkMetricsReachable},
	{"embedder switch", checkEmbedder},
	{"shared settings agree", checkSharedSettings},
	{"bind mounts exist", checkBindMounts},
	{"least privilege", checkLeastPrivilege},
}

func TestCompose(t *testing.T) {
	t.Parallel()
	runChecks(t, loadProject(t), composeChecks)
}

// runChecks runs each check on p as a subtest.
func runChecks(t *testing.T, p *project, checks []check) {
	t.Helper()
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			for _, problem := range c.fn(p) {
				t.Error(problem)
			}
		})
	}
}

func checkRequiredServices(p *project) []string {
	var problems []string
	for _, name := range requiredServices {
		if _, ok := p.file.Services[name]; !ok {
			problems = append(problems, fmt.Sprintf("service %s is missing", name))
		}
	}
	return problems
}

func checkSettings(p *project) []string {
	var problems []string
	for _, name := range p.sluiceServices() {
		bin, args := p.binary(name)
		if bin == "" {
			problems = append(problems, fmt.Sprintf("%s: no command: name the binary to run", name))
			continue
		}
		if _, err := os.Stat(filepath.Join(repoRoot, "cmd", bin)); err != nil {
			problems = append(problems, fmt.Sprintf("%s runs %q, which is not a command in cmd/", name, bin))
			continue
		}
		s, err := binarySettings(bin, args)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		for env := range p.file.Services[name].Environment {
			if !s.env[env] {
				problems = append(problems, fmt.Sprintf("%s sets %s, which %s does not read", name, env, bin))
			}
		}
		for _, f := range flagNames(args) {
			if !s.flags[f] {
				problems = append(problems, fmt.Sprintf("%s passes --%s, which %s does not define", name, f, bin))
			}
		}
	}
	return problems
}

func checkNATS(p *project) []string {
	var problems []string
	n := p.file.Services["nats"]
	for _, port := range n.Ports {
		if port.Target == "8222" {
			problems = append(problems, "nats publishes its monitoring port 8222: keep it inside the compose network")
		}
	}
	if !strings.Contains(n.Healthcheck.url(), "js-enabled-only=true") || !strings.Contains(n.Healthcheck.url(), ":8222/healthz") {
		problems = append(problems, fmt.Sprintf("nats healthcheck %q: want http://localhost:8222/healthz?js-enabled-only=true", n.Healthcheck.url()))
	}
	if v, _ := flagValue(n.Command, "http_port"); v != "8222" {
		if v, _ := flagValue(n.Command, "m"); v != "8222" {
			problems = append(problems, "nats command: enable monitoring with --http_port 8222")
		}
	}
	if !slices.Contains(n.Command, "--jetstream") && !slices.Contains(n.Command, "-js") {
		problems = append(problems, "nats command: enable JetStream with --jetstream")
	}
	store, _ := flagValue(n.Command, "store_dir")
	if store == "" || !slices.ContainsFunc(n.Volumes, func(v volumeSpec) bool { return v.Target == store && !v.bind() && v.Source != "" }) {
		problems = append(problems, fmt.Sprintf("nats: the JetStream store dir %q must be on a named volume", store))
	}
	return problems
}

// versionTag is a tag that names a version, not a moving target.
var versionTag = regexp.MustCompile(`\d`)

func checkImages(p *project) []string {
	var problems []string
	for name, s := range p.file.Services {
		ref, _, _ := strings.Cut(s.Image, "@")
		slash := strings.LastIndex(ref, "/")
		colon := strings.LastIndex(ref, ":")
		tag := ""
		if colon > slash {
			tag = ref[colon+1:]
		}
		switch {
		case s.Image == "":
			problems = append(problems, fmt.Sprintf("%s has no image: name and tag it", name))
		case tag == "" || tag == "latest":
			problems = append(problems, fmt.Sprintf("%s image %q: pin an explicit tag", name, s.Image))
		case s.Build == nil && !versionTag.MatchString(tag):
			problems = append(problems, fmt.Sprintf("%s image %q: pin a version, not a moving tag", name, s.Image))
		}
	}
	return problems
}

// checkMetricsReachable requires every long-running service to serve its
// metrics beyond loopback, which is where the binaries bind by default:
// Prometheus scrapes them over the compose network.
func checkMetricsReachable(p *project) []string {
	var problems []string
	for _, name := range p.sluiceServices() {
		if p.file.Services[name].oneShot() {
			continue
		}
		addr := p.effective(name, "METRICS_ADDR")
		bin, args := p.binary(name)
		switch bin {
		case "embed-sim":
			addr, _ = flagValue(args, "addr")
		case "sluice":
			continue // the CLI and its console serve no metrics
		}
		host, _, err := net.SplitHostPort(addr)
		if ip := net.ParseIP(host); err != nil || host == "localhost" || (ip != nil && ip.IsLoopback()) {
			problems = append(problems, fmt.Sprintf("%s serves metrics on %q: set METRICS_ADDR (embed-sim: --addr) to :PORT or 0.0.0.0:PORT so Prometheus can scrape it", name, addr))
		}
	}
	return problems
}

func checkEmbedder(p *project) []string {
	var problems []string
	for _, name := range []string{"consumer", "dlq-replayer"} {
		raw := p.raw.Services[name].Environment
		for _, env := range []string{"EMBEDDER_URL", "EMBEDDER_API_KEY", "EMBEDDER_MODEL"} {
			if !strings.HasPrefix(raw[env], "${"+env) {
				problems = append(problems, fmt.Sprintf("%s: set %s to ${%s:-...} so that a real provider is one variable away, has %q", name, env, env, raw[env]))
			}
		}
		u, err := url.Parse(p.file.Services[name].Environment["EMBEDDER_URL"])
		if err != nil || u.Hostname() != "embed-sim" || u.Port() != p.listenPort("embed-sim") {
			problems = append(problems, fmt.Sprintf("%s: EMBEDDER_URL defaults to %q, want embed-sim on the port it listens on (%s)",
				name, p.file.Services[name].Environment["EMBEDDER_URL"], p.listenPort("embed-sim")))
		}
	}
	return problems
}

// checkSharedSettings holds the consumer and the replayer to the same
// pipeline settings (consumer.PipelineSettings), and every service and
// embed-sim to one embedding dimension.
func checkSharedSettings(p *project) []string {
	var problems []string
	// Each service has its own NATS identity (internal/natsauth).
	perService := map[string]bool{"METRICS_ADDR": true, "LOG_LEVEL": true, "LOG_FORMAT": true,
		"NATS_URL": true, "NATS_CREDS": true, "NATS_TLS_CERT": true, "NATS_TLS_KEY": true}
	cons, _ := binarySettings("consumer", nil)
	repl, _ := binarySettings("dlq-replayer", nil)
	for env := range cons.env {
		if !repl.env[env] || perService[env] {
			continue
		}
		if a, b := p.effective("consumer", env), p.effective("dlq-replayer", env); a != b {
			problems = append(problems, fmt.Sprintf("%s is %q on consumer but %q on dlq-replayer: the pipeline settings must agree", env, a, b))
		}
	}
	_, simArgs := p.binary("embed-sim")
	dims, ok := flagValue(simArgs, "dims")
	if !ok {
		dims = "384"
	}
	for _, name := range p.sluiceServices() {
		if v, ok := p.file.Services[name].Environment["EMBEDDING_DIMS"]; ok && v != dims {
			problems = append(problems, fmt.Sprintf("%s has EMBEDDING_DIMS=%s but embed-sim serves --dims %s", name, v, dims))
		}
	}
	return problems
}

func checkBindMounts(p *project) []string {
	var problems []string
	for name, s := range p.file.Services {
		for _, v := range s.Volumes {
			if !v.bind() {
				if _, ok := p.file.Volumes[v.Source]; v.Source != "" && !ok {
					problems = append(problems, fmt.Sprintf("%s mounts volume %q, which is not declared under volumes:", name, v.Source))
				}
				continue
			}
			if _, err := os.Stat(filepath.Join(repoRoot, v.Source)); err != nil {
				problems = append(problems, fmt.Sprintf("%s mounts %s, which does not exist in the repository", name, v.Source))
			}
		}
	}
	return problems
}

// mountSource returns the repository path mounted at target in service.
func (p *project) mountSource(service, target string) string {
	for _, v := range p.file.Services[service].Volumes {
		if v.Target == target && v.bind() {
			return filepath.Clean(v.Source)
		}
	}
	return ""
}

// TestComposeChecksCatchMistakes proves each check can fail: it breaks a
// copy of docker-compose.yml in one way and expects that check to say so.
func TestComposeChecksCatchMistakes(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(repoRoot, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(name string, f func(s *service)) func(p *project) {
		return func(p *project) {
			s := p.file.Services[name]
			f(&s)
			p.file.Services[name] = s
		}
	}
	cases := []struct {
		name   string
		check  func(*project) []string
		mutate func(p *project)
		want   string
	}{
		{"service missing", checkRequiredServices, func(p *project) { delete(p.file.Services, "outbox-relay") }, "outbox-relay is missing"},
		{"unknown variable", checkSettings, edit("consumer", func(s *service) { s.Environment["EMBEDER_URL"] = "x" }), "EMBEDER_URL"},
		{"variable of another binary", checkSettings, edit("outbox-relay", func(s *service) { s.Environment["EMBEDDER_URL"] = "x" }), "outbox-relay sets EMBEDDER_URL"},
		{"unknown flag", checkSettings, edit("producer", func(s *service) { s.Command = append(s.Command, "--sauce=docs") }), "--sauce"},
		{"unknown embed-sim flag", checkSettings, edit("embed-sim", func(s *service) { s.Command = append(s.Command, "--rate-418", "1") }), "--rate-418"},
		{"environment on embed-sim", checkSettings, edit("embed-sim", func(s *service) { s.Environment = environment{"EMBEDDING_DIMS": "8"} }), "embed-sim does not read"},
		{"unknown migrate variable", checkSettings, edit("migrate", func(s *service) { s.Environment["NATS_URL"] = "x" }), "migrate sets NATS_URL"},
		{"unknown binary", checkSettings, edit("consumer", func(s *service) { s.Command = stringList{"consumerd"} }), "not a command"},
		{"monitoring published", checkNATS, edit("nats", func(s *service) { s.Ports = append(s.Ports, portSpec{"8222", "8222"}) }), "8222"},
		{"plain health URL", checkNATS, edit("nats", func(s *service) {
			s.Healthcheck = &healthcheck{Test: stringList{"CMD", "wget", "http://localhost:8222/healthz"}}
		}), "js-enabled-only"},
		{"latest", checkImages, edit("grafana", func(s *service) { s.Image = "grafana/grafana:latest" }), "pin an explicit tag"},
		{"no tag", checkImages, edit("postgres", func(s *service) { s.Image = "pgvector/pgvector" }), "pin an explicit tag"},
		{"metrics on loopback", checkMetricsReachable, edit("dlq-replayer", func(s *service) { delete(s.Environment, "METRICS_ADDR") }), "dlq-replayer serves metrics on \"127.0.0.1:9103\""},
		{"hard-wired embedder", checkEmbedder, func(p *project) { p.raw.Services["consumer"].Environment["EMBEDDER_URL"] = "http://embed-sim:8089" }, "a real provider is one variable away"},
		{"disagreeing pipelines", checkSharedSettings, edit("dlq-replayer", func(s *service) { s.Environment["MAX_DELIVERIES"] = "9" }), "MAX_DELIVERIES"},
		{"disagreeing dims", checkSharedSettings, edit("migrate", func(s *service) { s.Environment["EMBEDDING_DIMS"] = "768" }), "EMBEDDING_DIMS=768"},
		{"service as another role", checkLeastPrivilege, edit("consumer", func(s *service) {
			s.Environment["NATS_URL"] = strings.Replace(s.Environment["NATS_URL"], "consumer:", "owner:", 1)
		}), "consumer connects to NATS as \"owner\""},
		{"stale NATS password", checkLeastPrivilege, edit("nats", func(s *service) { s.Environment["NATS_PRODUCER_PASSWORD"] = "rotated" }), "differs"},
		{"service as schema owner", checkLeastPrivilege, edit("outbox-relay", func(s *service) {
			s.Environment["DATABASE_URL"] = "postgres://sluice:sluice@postgres:5432/sluice"
		}), "outbox-relay: DATABASE_URL must connect as sluice_runtime"},
		{"missing bind source", checkBindMounts, edit("prometheus", func(s *service) { s.Volumes = append(s.Volumes, volumeSpec{"./deploy/nope.yml", "/x"}) }), "does not exist"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := parseProject(data)
			if err != nil {
				t.Fatal(err)
			}
			if problems := c.check(p); len(problems) != 0 {
				t.Fatalf("the unbroken file already fails: %q", problems)
			}
			c.mutate(p)
			problems := c.check(p)
			if !slices.ContainsFunc(problems, func(s string) bool { return strings.Contains(s, c.want) }) {
				t.Errorf("problems %q, want one mentioning %q", problems, c.want)
			}
		})
	}
}

func TestInterpolate(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"${EMBEDDER_URL:-http://embed-sim:8089}":   "http://embed-sim:8089",
		"${A-x}/${B:-y}":                           "x/y",
		"pre-${UNSET}-post":                        "pre--post",
		"$$HOME and $UNSET":                        "$HOME and ",
		"postgres://u:${PW:-pw}@h:5432/db?ssl=off": "postgres://u:pw@h:5432/db?ssl=off",
		"${ALT:+alt}":                              "",
	} {
		if got, err := interpolate(in); err != nil || got != want {
			t.Errorf("interpolate(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := interpolate("${REQUIRED:?set it}"); err == nil {
		t.Error("${REQUIRED:?...} with REQUIRED unset: want an error")
	}
}

// TestDockerfile checks what compose relies on: every command built
// statically into /usr/local/bin of a small image run by a non-root user.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	stages := regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindAllStringSubmatch(text, -1)
	if len(stages) < 2 || !strings.HasPrefix(stages[0][1], "golang:1.26") {
		t.Errorf("stages %q: want a golang:1.26 build stage and a runtime stage", stages)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", `-ldflags "-s -w"`, "./cmd/...", "/usr/local/bin/"} {
		if !strings.Contains(text, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	users := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindAllStringSubmatch(text, -1)
	if len(users) == 0 || slices.Contains([]string{"root", "0", "0:0", "root:root"}, users[len(users)-1][1]) {
		t.Errorf("USER %q: the runtime stage must run as a non-root user", users)
	}
	if regexp.MustCompile(`(?m)^ENTRYPOINT`).MatchString(text) {
		t.Error("ENTRYPOINT set: compose names the binary as the first word of each command")
	}
}
