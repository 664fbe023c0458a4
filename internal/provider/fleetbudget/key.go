package fleetbudget

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
)

// Fingerprint is the default budget key of a provider: "p" and 16 hex
// digits of the SHA-256 of its URL and API key. The truncation keeps
// nothing that helps guess a key, and 64 bits keep unrelated keys apart.
func Fingerprint(url, apiKey string) string {
	sum := sha256.Sum256([]byte("sluice budget\x00" + url + "\x00" + apiKey))
	return "p" + hex.EncodeToString(sum[:8])
}

// validKey is what a budget key may hold: one token of a NATS subject.
var validKey = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// checkKey says what is wrong with an explicit budget key.
func checkKey(key string) error {
	if !validKey.MatchString(key) {
		return fmt.Errorf("BUDGET_KEY %q: use 1 to 64 letters, digits, '-' or '_', the same on every process that shares the provider's quota", key)
	}
	return nil
}
