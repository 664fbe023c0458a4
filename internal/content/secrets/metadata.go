package secrets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
)

// Finding is a secret found in a document's metadata.
type Finding struct {
	// Rule names the kind of secret, one of the Rule* constants.
	Rule string
	// Path locates the value: object keys joined by dots, array elements
	// by their index in brackets, as in "auth.headers[0]".
	Path string
}

// passwordKey matches metadata keys whose string value is a password,
// and credentialKey those whose value is another credential: a secret, a
// token, an API or private key, credentials, an auth header.
var (
	passwordKey   = regexp.MustCompile(`(?i)(?:password|passwd|pwd|passphrase)$`)
	credentialKey = regexp.MustCompile(`(?i)(?:secret|token|api_?key|private_?key|access_?key|secret_?key|` +
		`signing_?key|encryption_?key|master_?key|credentials?|auth|authorization|cookie)$`)
)

// ScanMetadata returns the secrets in the string values of a document's
// metadata, a decoded JSON object, in key order. It descends into nested
// objects and arrays. Besides what Scan finds in each value, a value under
// a key named like a password (password, db_passwd, PWD, …) is reported as
// a password_assignment when it passes the same plausibility test as in
// text, and a value under a key named like another credential
// (client_secret, access_token, apiKey, private_key, credentials, auth,
// Authorization, …) as a generic_secret when it passes that same test:
// a metadata key names its value exactly, which a word in prose does not.
func ScanMetadata(meta map[string]any) []Finding {
	var out []Finding
	walkValue("", "", meta, &out)
	return out
}

// ScanMetadataJSON is ScanMetadata for metadata still encoded, such as a
// chunk job's. Empty input and JSON null hold no secret; anything else
// that is not a JSON object is an error.
func ScanMetadataJSON(raw []byte) ([]Finding, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var meta map[string]any
	if err := dec.Decode(&meta); err != nil {
		return nil, fmt.Errorf("scan metadata: %w", err)
	}
	return ScanMetadata(meta), nil
}

func walkValue(path, key string, v any, out *[]Finding) {
	switch v := v.(type) {
	case string:
		for _, m := range Scan(v) {
			*out = append(*out, Finding{Rule: m.Rule, Path: path})
		}
		switch {
		case !plausiblePassword(v):
		case passwordKey.MatchString(key):
			*out = append(*out, Finding{Rule: RulePassword, Path: path})
		case credentialKey.MatchString(key):
			*out = append(*out, Finding{Rule: RuleGenericSecret, Path: path})
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			walkValue(p, k, v[k], out)
		}
	case []any:
		for i, e := range v {
			walkValue(path+"["+strconv.Itoa(i)+"]", key, e, out)
		}
	}
}
