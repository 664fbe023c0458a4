// Package configtest runs table tests of configuration validation: each
// case is a configuration and the error its Validate must give, so that
// every config's tests read the same way. Only tests import it.
package configtest
