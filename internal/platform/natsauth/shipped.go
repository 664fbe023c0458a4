package natsauth

// ShippedPath is the shipped server configuration, relative to the
// repository root; docker-compose.yml mounts it.
const ShippedPath = "deploy/nats/nats.conf"

// ShippedMonitor is where the shipped configuration serves monitoring:
// the server's loopback, for its own healthcheck.
const ShippedMonitor = "127.0.0.1:8222"

// shippedHeader explains the shipped file to whoever opens it.
const shippedHeader = `# nats-server configuration for Sluice, generated from internal/platform/natsauth
# (go test ./internal/platform/natsauth -run TestShippedConfig -update rewrites it).
#
# One user per role, each allowed only its own subjects; only "owner" may
# create, update or delete streams and consumers. Passwords come from the
# server's environment (NATS_<ROLE>_PASSWORD); the server refuses to start
# when one is missing. The server reads a variable's value as it would a
# value in this file, so a password must not read as a number: use a letter
# followed by letters, digits, - and _ (e.g. p$(openssl rand -hex 24)). To rotate one, change it in the server's environment
# and in the service's NATS_URL, then restart both (docker compose up -d
# does, after an edit of .env).
#
# max_payload is the largest message, headers included, and equals the
# MaxMsgSize Sluice declares on its streams (internal/platform/broker.MaxPayload).
# Monitoring (/healthz, /varz, /connz) listens on the server's own loopback
# only: the container's healthcheck reaches it, other containers of the
# network do not.
`

// Shipped is the content of the shipped configuration file.
func Shipped() string {
	return shippedHeader + ServerConfig{Users: UsersFromEnv(), Monitor: ShippedMonitor}.Render()
}
