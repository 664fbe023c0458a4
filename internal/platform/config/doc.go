// Package config loads service configuration: command-line flags win over
// environment variables, which win over documented defaults. Every setting
// is registered once with its flag name, environment variable and
// default, so the set can be listed (for --help, the README and the
// compose-file check) and validated with messages that say how to fix it.
package config
