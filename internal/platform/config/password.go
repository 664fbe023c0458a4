package config

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// MinPasswordLength is the shortest password a service accepts outside a
// demo.
const MinPasswordLength = 12

// DemoEnv names the setting that accepts the shipped default passwords
// and short ones, for demos and local stacks only.
const DemoEnv = "SLUICE_DEMO"

// ShippedPasswords are the passwords docker-compose.yml falls back to when
// .env sets none: well known, so never good outside a demo.
// tests/deploytest checks that the compose files use no others.
var ShippedPasswords = []string{
	"sluice", "sluice-runtime", "sluice-readonly", "sluice-owner", "sluice-producer", "sluice-consumer",
	"sluice-outbox-relay", "sluice-dlq-replayer", "sluice-operator", "sluice-console", "admin",
}

// ErrWeakPassword is what CheckPassword returns, wrapped, for a shipped
// default or a short password.
var ErrWeakPassword = errors.New("weak password")

// CheckPassword refuses a password that is one of ShippedPasswords, the
// user's own name, or shorter than MinPasswordLength. An empty password
// passes: the server then authenticates otherwise (a certificate, a
// credentials file, trust on loopback). setting names where the password
// came from, for the message.
func CheckPassword(setting, user, password string) error {
	if password == "" {
		return nil
	}
	why := ""
	switch {
	case slices.Contains(ShippedPasswords, password):
		why = "is a default shipped with Sluice"
	case strings.EqualFold(password, user):
		why = "is the user's name"
	case len(password) < MinPasswordLength:
		why = fmt.Sprintf("is shorter than %d characters", MinPasswordLength)
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("%w: %s: the password of %q %s; set a strong one (in .env for docker compose), or %s=1 for a demo",
		ErrWeakPassword, setting, user, why, DemoEnv)
}

// checkURLPasswords applies CheckPassword to the user info of every URL in
// a comma-separated list.
func checkURLPasswords(setting, urls string) error {
	var errs []error
	for _, s := range strings.Split(urls, ",") {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil || u.User == nil {
			continue
		}
		pw, _ := u.User.Password()
		if err := CheckPassword(setting, u.User.Username(), pw); err != nil {
			errs = append(errs, err)
			break
		}
	}
	return errors.Join(errs...)
}
