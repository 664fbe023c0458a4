package natsauth

import (
	"net/url"
	"strings"
)

// URLWithUser puts user and password into every URL of a comma-separated
// NATS server list, which is how a Sluice process is given its role:
// NATS_URL=nats://producer:…@host:4222. A URL that does not parse is
// left as it is, for the client to report.
func URLWithUser(servers, user, password string) string {
	parts := strings.Split(servers, ",")
	for i, s := range parts {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil || u.Host == "" {
			continue
		}
		u.User = url.UserPassword(user, password)
		parts[i] = u.String()
	}
	return strings.Join(parts, ",")
}
