package testenv

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/sluicehq/sluice/internal/dev/localenv"
)

// Container images used when no local binaries are available, the public
// ones docker-compose.yml pins unless SLUICE_POSTGRES_IMAGE and
// SLUICE_NATS_IMAGE name others (make test-deploy sets them to images it
// builds where no registry is reachable). pgvector's image is PostgreSQL
// with the vector extension, so the vector store runs in its native mode
// there.
const (
	defaultPostgresImage = "pgvector/pgvector:0.8.0-pg17"
	defaultNATSImage     = "nats:2.11-alpine"
)

func postgresImage() string { return cmp.Or(os.Getenv("SLUICE_POSTGRES_IMAGE"), defaultPostgresImage) }
func natsImage() string     { return cmp.Or(os.Getenv("SLUICE_NATS_IMAGE"), defaultNATSImage) }

// dockerAvailable reports whether a Docker engine answers. testcontainers
// panics in some setups without Docker, so the probe recovers.
func dockerAvailable(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("docker provider: %v", r)
		}
	}()
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return err
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return p.Health(ctx)
}

// loopback is where containers publish their ports: tests reach them
// there, and nothing else can. (testcontainers would otherwise publish on
// every interface and, when the tests run inside a container, connect
// through the default gateway.)
const loopback = "127.0.0.1"

// publishOnLoopback publishes port on loopback only, on a free host port.
func publishOnLoopback(port string) testcontainers.CustomizeRequestOption {
	return testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
		hc.PortBindings = network.PortMap{network.MustParsePort(port): {{HostIP: netip.MustParseAddr(loopback)}}}
	})
}

// loopbackEndpoint is host:port of the container's port published on
// loopback.
func loopbackEndpoint(ctx context.Context, c testcontainers.Container, port string) (string, error) {
	p, err := c.MappedPort(ctx, port)
	if err != nil {
		return "", fmt.Errorf("published port of %s: %w", port, err)
	}
	return net.JoinHostPort(loopback, p.Port()), nil
}

func startContainerPostgres(ctx context.Context, image string) (*Postgres, error) {
	if err := dockerAvailable(ctx); err != nil {
		return nil, err
	}
	c, err := testcontainers.Run(ctx, image,
		testcontainers.WithExposedPorts("5432/tcp"),
		publishOnLoopback("5432/tcp"),
		testcontainers.WithEnv(map[string]string{"POSTGRES_HOST_AUTH_METHOD": "trust"}),
		testcontainers.WithWaitStrategy(wait.ForLog("database system is ready to accept connections").WithOccurrence(2)),
	)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", image, err)
	}
	endpoint, err := loopbackEndpoint(ctx, c, "5432/tcp")
	if err != nil {
		_ = c.Terminate(context.Background())
		return nil, err
	}
	// A restarted container may come back on another host port, so the
	// crash helpers refuse it.
	return localenv.AttachPostgres(fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", endpoint),
		func(ctx context.Context) error { return c.Terminate(ctx) }), nil
}

// startContainerNATS runs NATS in a container with a user per role; its
// configuration file is written under dir and copied in.
func startContainerNATS(ctx context.Context, dir string) (*NATS, error) {
	if err := dockerAvailable(ctx); err != nil {
		return nil, err
	}
	return localenv.HostNATS(ctx, filepath.Join(dir, "nats.conf"), runNATSContainer)
}

// runNATSContainer runs natsImage with the server configuration conf.
func runNATSContainer(ctx context.Context, conf string) (string, func(context.Context) error, error) {
	image := natsImage()
	// The binary named first: the official image's entrypoint accepts
	// that, and an image without an entrypoint needs it.
	c, err := testcontainers.Run(ctx, image,
		testcontainers.WithFiles(testcontainers.ContainerFile{HostFilePath: conf, ContainerFilePath: "/etc/nats/sluice.conf", FileMode: 0o644}),
		testcontainers.WithCmd("nats-server", "-js", "-c", "/etc/nats/sluice.conf"),
		testcontainers.WithExposedPorts("4222/tcp"),
		publishOnLoopback("4222/tcp"),
		testcontainers.WithWaitStrategy(wait.ForLog("Server is ready")),
	)
	if err != nil {
		return "", nil, fmt.Errorf("run %s: %w", image, err)
	}
	endpoint, err := loopbackEndpoint(ctx, c, "4222/tcp")
	if err != nil {
		_ = c.Terminate(context.Background())
		return "", nil, err
	}
	return "nats://" + endpoint, func(ctx context.Context) error { return c.Terminate(ctx) }, nil
}
