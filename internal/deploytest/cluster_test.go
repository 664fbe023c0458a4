package deploytest

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// clusterOverride is the compose override that runs NATS as a cluster.
const clusterOverride = "deploy/cluster/docker-compose.cluster.yml"

// clusterNodes are the NATS services of the cluster variant.
var clusterNodes = []string{"nats", "nats-2", "nats-3"}

// loadCluster reads docker-compose.yml with the cluster override merged
// on top, as `docker compose -f docker-compose.yml -f <override>` does.
func loadCluster(t *testing.T) *project {
	t.Helper()
	base := loadProject(t)
	data, err := os.ReadFile(filepath.Join(repoRoot, clusterOverride))
	if err != nil {
		t.Fatal(err)
	}
	over, err := parseProject(data)
	if err != nil {
		t.Fatalf("%s: %v", clusterOverride, err)
	}
	return &project{raw: merge(base.raw, over.raw), file: merge(base.file, over.file)}
}

// merge applies over to base with compose's rules for the keys the checks
// read: scalars and lists that replace (image, command, healthcheck …)
// are replaced when set, environment maps are merged, volumes are merged
// by target, and ports appended.
func merge(base, over composeFile) composeFile {
	out := composeFile{Services: map[string]service{}, Volumes: map[string]any{}}
	for name, s := range base.Services {
		out.Services[name] = s
	}
	for name, o := range over.Services {
		out.Services[name] = mergeService(out.Services[name], o)
	}
	for name, v := range base.Volumes {
		out.Volumes[name] = v
	}
	for name, v := range over.Volumes {
		out.Volumes[name] = v
	}
	return out
}

func mergeService(s, o service) service {
	s.Image = cmpOr(o.Image, s.Image)
	s.Restart = cmpOr(o.Restart, s.Restart)
	if o.Build != nil {
		s.Build = o.Build
	}
	if o.Entrypoint != nil {
		s.Entrypoint = o.Entrypoint
	}
	if o.Command != nil {
		s.Command = o.Command
	}
	if o.Healthcheck != nil {
		s.Healthcheck = o.Healthcheck
	}
	if o.Profiles != nil {
		s.Profiles = o.Profiles
	}
	env := environment{}
	for k, v := range s.Environment {
		env[k] = v
	}
	for k, v := range o.Environment {
		env[k] = v
	}
	s.Environment = env
	s.Ports = append(slices.Clone(s.Ports), o.Ports...)
	for _, v := range o.Volumes {
		s.Volumes = slices.DeleteFunc(slices.Clone(s.Volumes), func(b volumeSpec) bool { return b.Target == v.Target })
		s.Volumes = append(s.Volumes, v)
	}
	return s
}

// TestComposeCluster runs every check of the default file on the cluster
// variant, then the cluster's own: every node set up alike with its own
// name and store, and every client given every node.
func TestComposeCluster(t *testing.T) {
	t.Parallel()
	runChecks(t, loadCluster(t), append(slices.Clone(composeChecks), check{"cluster", checkCluster}))
}

// checkCluster checks the three nodes and their clients.
func checkCluster(p *project) []string {
	var problems []string
	names, stores := map[string]bool{}, map[string]bool{}
	for _, node := range clusterNodes {
		n, ok := p.file.Services[node]
		if !ok {
			problems = append(problems, fmt.Sprintf("cluster node %s is missing", node))
			continue
		}
		// Each node passes the checks of the single server.
		one := &project{file: composeFile{Services: map[string]service{"nats": n}}}
		for _, problem := range checkNATS(one) {
			problems = append(problems, node+": "+problem)
		}
		problems = append(problems, checkNode(p, node, n, names, stores)...)
	}
	for name, s := range p.file.Services {
		if got, ok := s.Environment["NATS_URL"]; ok && !reachesEveryNode(got) {
			problems = append(problems, fmt.Sprintf("%s: NATS_URL %q, want every node (%s) with one user", name, got, strings.Join(clusterNodes, ", ")))
		}
	}
	if r := p.file.Services["nats-setup"].Environment["STREAM_REPLICAS"]; r != "3" {
		problems = append(problems, fmt.Sprintf("nats-setup: STREAM_REPLICAS %q, want 3: the topology owner declares the streams", r))
	}
	return problems
}

// reachesEveryNode reports whether list names every node's client port,
// in order, as one and the same user.
func reachesEveryNode(list string) bool {
	urls := strings.Split(list, ",")
	if len(urls) != len(clusterNodes) {
		return false
	}
	var user string
	for i, raw := range urls {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || u.Host != clusterNodes[i]+":4222" {
			return false
		}
		if i == 0 {
			user = u.User.Username()
		} else if u.User.Username() != user {
			return false
		}
	}
	return true
}

// checkNode checks one node's cluster settings; names and stores collect
// what the nodes must not share.
func checkNode(p *project, node string, n service, names, stores map[string]bool) []string {
	var problems []string
	name, _ := flagValue(n.Command, "server_name")
	if name == "" || names[name] {
		problems = append(problems, fmt.Sprintf("%s: --server_name %q must be set and differ from the other nodes'", node, name))
	}
	names[name] = true
	if v, _ := flagValue(n.Command, "cluster_name"); v == "" {
		problems = append(problems, node+": set --cluster_name")
	}
	if v, _ := flagValue(n.Command, "cluster"); !strings.HasSuffix(v, ":6222") {
		problems = append(problems, fmt.Sprintf("%s: --cluster %q, want a route listener on :6222", node, v))
	}
	routes, _ := flagValue(n.Command, "routes")
	for _, other := range clusterNodes {
		if !strings.Contains(routes, "nats://"+other+":6222") {
			problems = append(problems, fmt.Sprintf("%s: --routes %q lacks %s", node, routes, other))
		}
	}
	store, _ := flagValue(n.Command, "store_dir")
	for _, v := range n.Volumes {
		if v.Target == store && v.Source != "" {
			if stores[v.Source] {
				problems = append(problems, fmt.Sprintf("%s: store volume %s is another node's", node, v.Source))
			}
			stores[v.Source] = true
			if _, ok := p.file.Volumes[v.Source]; !ok {
				problems = append(problems, fmt.Sprintf("%s: store volume %s is not declared", node, v.Source))
			}
		}
	}
	return problems
}

// TestComposeClusterChecksCatchMistakes proves the cluster check can fail.
func TestComposeClusterChecksCatchMistakes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(p *project)
		want   string
	}{
		{"one URL", func(p *project) { p.file.Services["outbox-relay"].Environment["NATS_URL"] = "nats://nats:4222" }, "outbox-relay: NATS_URL"},
		{"R1", func(p *project) { delete(p.file.Services["nats-setup"].Environment, "STREAM_REPLICAS") }, "STREAM_REPLICAS"},
		{"node missing", func(p *project) { delete(p.file.Services, "nats-3") }, "nats-3 is missing"},
		{"shared store", func(p *project) {
			s := p.file.Services["nats-3"]
			s.Volumes = []volumeSpec{{"nats-2-data", "/data"}}
			p.file.Services["nats-3"] = s
		}, "another node's"},
		{"same name", func(p *project) {
			s := p.file.Services["nats-2"]
			s.Command = slices.Clone(s.Command)
			i := slices.Index(s.Command, "nats-2")
			s.Command[i] = "nats-1"
			p.file.Services["nats-2"] = s
		}, "--server_name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := loadCluster(t)
			if problems := checkCluster(p); len(problems) != 0 {
				t.Fatalf("the unbroken variant already fails: %q", problems)
			}
			c.mutate(p)
			problems := checkCluster(p)
			if !slices.ContainsFunc(problems, func(s string) bool { return strings.Contains(s, c.want) }) {
				t.Errorf("problems %q, want one mentioning %q", problems, c.want)
			}
		})
	}
}
