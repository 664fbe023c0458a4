package deploytest

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// repoRoot is where the deployment files live, relative to this package.
const repoRoot = "../.."

// The compose files of each stack: one NATS server, or the cluster
// override merged on top as `docker compose -f … -f …` merges it.
var (
	singleStack  = []string{"docker-compose.yml"}
	clusterStack = []string{"docker-compose.yml", "deploy/cluster/docker-compose.cluster.yml"}
)

// deployFiles are the files the checks read besides the compose files.
var deployFiles = []string{"deploy/prometheus/prometheus.yml", "deploy/prometheus/alerts.yml",
	"deploy/prometheus/alerts_test.yml", "deploy/grafana/provisioning/datasources/prometheus.yml",
	"deploy/grafana/provisioning/dashboards/sluice.yml", "deploy/grafana/dashboards/sluice.json", "docs/operations.md"}

// deployment is one stack as compose runs it with no variables set, with
// the text of every file the checks read.
type deployment struct {
	*types.Project
	stack []string
	files map[string]string // by path from repoRoot
}

// edit replaces from with to in file; the zero edit changes nothing.
type edit struct{ file, from, to string }

func load(t *testing.T, stack []string, e edit) *deployment {
	t.Helper()
	d := &deployment{stack: stack, files: map[string]string{}}
	for _, f := range append(slices.Clone(deployFiles), clusterStack...) {
		data, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		d.files[f] = string(data)
	}
	if e.file != "" {
		if !strings.Contains(d.files[e.file], e.from) {
			t.Fatalf("%s no longer holds %q: update the test", e.file, e.from)
		}
		d.files[e.file] = strings.Replace(d.files[e.file], e.from, e.to, 1)
	}
	p, err := d.compose(nil)
	if err != nil {
		t.Fatal(err)
	}
	d.Project = p
	return d
}

// compose loads the stack with Compose's own loader, interpolating env,
// with every profile enabled.
func (d *deployment) compose(env map[string]string) (*types.Project, error) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		return nil, err
	}
	details := types.ConfigDetails{WorkingDir: root, Environment: maps.Clone(env)}
	for _, f := range d.stack {
		details.ConfigFiles = append(details.ConfigFiles, types.ConfigFile{Filename: filepath.Join(root, f), Content: []byte(d.files[f])})
	}
	return loader.LoadWithContext(context.Background(), details, loader.WithProfiles([]string{"*"}),
		func(o *loader.Options) { o.SetProjectName("sluice", true) })
}

// checks return the problems they find in a deployment.
var checks = map[string]func(*deployment) []string{
	"settings exist in the binaries": checkSettings,
	"images hold the binaries":       checkImages,
	"ports agree":                    checkServing,
	"embedder switch":                checkEmbedder,
	"one embedding model":            checkEmbeddingModel,
	"shared settings agree":          checkSharedSettings,
	"least privilege":                checkPrivilege,
	"nats nodes":                     checkNATS,
	"bind mounts exist":              checkBindMounts,
	"monitoring is read-only":        checkMonitoring,
	"nats monitoring on loopback":    checkNATSMonitoring,
	"password defaults are refused":  checkPasswordDefaults,
	"queried metrics exist":          checkQueries,
	"alert rule tests":               checkAlertTests,
	"grafana provisioning":           checkGrafana,
}

func problems(d *deployment) []string {
	var all []string
	for _, check := range checks {
		all = append(all, check(d)...)
	}
	return all
}

func TestDeployment(t *testing.T) {
	t.Parallel()
	for _, stack := range [][]string{singleStack, clusterStack} {
		d := load(t, stack, edit{})
		for name, check := range checks {
			t.Run(stack[len(stack)-1]+"/"+name, func(t *testing.T) {
				for _, problem := range check(d) {
					t.Error(problem)
				}
			})
		}
	}
}

// TestChecksCatchMistakes breaks one file in one way and expects the
// checks to say so.
func TestChecksCatchMistakes(t *testing.T) {
	t.Parallel()
	const compose, cluster = "docker-compose.yml", "deploy/cluster/docker-compose.cluster.yml"
	const alerts, dashboard = "deploy/prometheus/alerts.yml", "deploy/grafana/dashboards/sluice.json"
	for _, c := range []struct {
		name  string
		stack []string
		edit  edit
		want  string
	}{
		{"unlisted default password", singleStack, edit{compose, "${NATS_CONSUMER_PASSWORD:-sluice-consumer}", "${NATS_CONSUMER_PASSWORD:-hunter2}"}, "NATS_CONSUMER_PASSWORD falls back to \"hunter2\""},
		{"nats monitoring on every interface", singleStack, edit{compose, `"--store_dir", "/data", "--server_name"`, `"--store_dir", "/data", "--http_port", "8222", "--server_name"`}, "nats passes --http_port"},
		{"prometheus lifecycle", singleStack, edit{compose, "--storage.tsdb.path=/prometheus", "--storage.tsdb.path=/prometheus\n      - --web.enable-lifecycle"}, "prometheus runs with --web.enable-lifecycle"},
		{"unknown variable", singleStack, edit{compose, "CONSUMER_WORKERS:", "CONSUMER_WORKER:"}, "consumer sets CONSUMER_WORKER,"},
		{"variable of another binary", singleStack, edit{compose, `METRICS_ADDR: ":9102"`, `METRICS_ADDR: ":9102"` + "\n      ACK_WAIT: 1m"}, "outbox-relay sets ACK_WAIT"},
		{"unknown flag", singleStack, edit{compose, `"--source", "docs"`, `"--sauce", "docs"`}, "producer passes --sauce"},
		{"unknown embed-sim flag", singleStack, edit{compose, `"--model"`, `"--modle"`}, "embed-sim passes --modle"},
		{"simulator in the product image", singleStack, edit{compose, "      target: embed-sim\n", "      target: sluice\n"}, `embed-sim runs embed-sim from the Dockerfile's target "sluice"`},
		{"simulator tagged as the product", singleStack, edit{compose, "image: sluice-embed-sim:", "image: sluice:"}, `name it sluice-embed-sim:`},
		{"product without a target", singleStack, edit{compose, "    target: sluice\n", ""}, `consumer runs consumer from the Dockerfile's target ""`},
		{"unknown binary", singleStack, edit{compose, `command: ["consumer"]`, `command: ["consumerd"]`}, "not a command"},
		{"database left at loopback", singleStack, edit{compose, "      DATABASE_URL: *consumer-database-url\n", ""}, "consumer leaves DATABASE_URL"},
		{"metrics on loopback", singleStack, edit{compose, `METRICS_ADDR: ":9103"`, `METRICS_ADDR: "127.0.0.1:9103"`}, "dlq-replayer listens on \"127.0.0.1:9103\""},
		{"health on another port", singleStack, edit{compose, "http://127.0.0.1:9102/healthz", "http://127.0.0.1:9101/healthz"}, "outbox-relay's healthcheck"},
		{"unscraped port", singleStack, edit{compose, `METRICS_ADDR: ":9101"`, `METRICS_ADDR: ":9111"`}, "does not scrape consumer on port 9111"},
		{"hard-wired embedder", singleStack, edit{compose, "${EMBEDDER_URL:-http://embed-sim:8089}", "http://embed-sim:8089"}, "EMBEDDER_URL"},
		{"producer without the model", singleStack, edit{compose, "      EMBEDDER_MODEL: *embedder-model\n      DATABASE_URL: *producer-database-url", "      DATABASE_URL: *producer-database-url"}, "producer reads EMBEDDER_MODEL"},
		{"search without the embedder", singleStack, edit{compose, "      EMBEDDER_URL: *embedder-url\n      EMBEDDER_MODEL: *embedder-model\n      EMBEDDER_API_KEY: *embedder-api-key\n      EMBEDDER_ENCODING: *embedder-encoding\n", ""}, "sluice leaves EMBEDDER_URL"},
		{"model of its own", singleStack, edit{compose, "EMBEDDER_MODEL: *embedder-model", "EMBEDDER_MODEL: embed-sim-1"}, "gives it \"embed-sim-1\""},
		{"embedder port", singleStack, edit{compose, `"--addr", ":8089"`, `"--addr", ":8088"`}, "want embed-sim on the port it listens on"},
		{"disagreeing pipelines", singleStack, edit{compose, "DLQ_ROLES:", "MAX_DELIVERIES: 9\n      DLQ_ROLES:"}, "MAX_DELIVERIES"},
		{"disagreeing dims", singleStack, edit{compose, `"--dims", "${EMBEDDING_DIMS:-384}"`, `"--dims", "768"`}, "embed-sim serves --dims 768"},
		{"service as another role", singleStack, edit{compose, "nats://consumer:", "nats://owner:"}, "consumer connects to NATS as \"owner\""},
		{"stale NATS password", singleStack, edit{compose, "NATS_PRODUCER_PASSWORD: ${NATS_PRODUCER_PASSWORD:-sluice-producer}", "NATS_PRODUCER_PASSWORD: rotated"}, "differs"},
		{"service as schema owner", singleStack, edit{compose, "postgres://sluice_consumer:", "postgres://sluice:"}, "consumer: DATABASE_URL must connect as sluice_consumer"},
		{"service as another's role", singleStack, edit{compose, "DATABASE_URL: *relay-database-url", "DATABASE_URL: *replayer-database-url"}, "outbox-relay: DATABASE_URL must connect as sluice_relay"},
		{"stale PostgreSQL password", singleStack, edit{compose, "SLUICE_CONSOLE_PASSWORD: ${SLUICE_CONSOLE_PASSWORD:-sluice-console}", "SLUICE_CONSOLE_PASSWORD: rotated"}, "differs from the one migrate sets (SLUICE_CONSOLE_PASSWORD)"},
		{"store not on a volume", singleStack, edit{compose, "- nats-data:/data", "- nats-data:/store"}, "named volume"},
		{"missing bind source", singleStack, edit{compose, "./deploy/nats/nats.conf:", "./deploy/nats/nats.cnf:"}, "does not exist"},
		{"one URL", clusterStack, edit{cluster, "NATS_URL: *relay-urls", "NATS_URL: nats://outbox-relay:x@nats:4222"}, "outbox-relay: NATS_URL"},
		{"R1", clusterStack, edit{cluster, `STREAM_REPLICAS: "3"`, `STREAM_REPLICAS: "1"`}, "STREAM_REPLICAS"},
		{"shared store", clusterStack, edit{cluster, "- nats-3-data:/data", "- nats-2-data:/data"}, "another node's"},
		{"same name", clusterStack, edit{cluster, `"--server_name", "nats-3"`, `"--server_name", "nats-2"`}, "--server_name"},
		{"node without passwords", clusterStack, edit{cluster, "  environment:\n    <<: *nats-passwords\n", ""}, "nats-2: NATS_OWNER_PASSWORD"},
		{"alert on unknown metric", singleStack, edit{alerts, "sluice_parked_total", "sluice_parked_totl"}, "sluice_parked_totl, which no Go code defines"},
		{"alert on unknown label", singleStack, edit{alerts, `{durable="workers"}) > 1800`, `{stream="workers"}) > 1800`}, `label "stream"`},
		{"counter as histogram", singleStack, edit{alerts, "sluice_parked_total", "sluice_parked_total_bucket"}, "no Go code defines"},
		{"dashboard typo", singleStack, edit{dashboard, "sluice_replays_total", "sluice_replay_total"}, "sluice_replay_total"},
		{"dashboard datasource", singleStack, edit{dashboard, `"uid": "prometheus"`, `"uid": "prom"`}, "datasource"},
		{"broken runbook link", singleStack, edit{alerts, "#runbook-parked-spike", "#runbook-parked-spikes"}, "runbook-parked-spikes"},
		{"alert never silent", singleStack, edit{"deploy/prometheus/alerts_test.yml", "alertname: SluiceOutboxStuck\n        exp_alerts: []", "alertname: SluiceOutboxStuck\n        exp_alerts: [{}]"}, "SluiceOutboxStuck stays silent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := problems(load(t, c.stack, c.edit))
			if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, c.want) }) {
				t.Errorf("problems %q, want one mentioning %q", got, c.want)
			}
		})
	}
}
