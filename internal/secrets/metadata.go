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

// secretKey matches metadata keys whose string value is a password.
var secretKey = regexp.MustCompile(`(?i)(?:password|passwd|pwd)$`)

// ScanMetadata returns the secrets in the string values of a document's
// metadata, a decoded JSON object, in key order. It descends into nested
// objects and arrays. Besides what Scan finds in each value, a value under
// a key named like a password (password, db_passwd, PWD, …) is reported as
// a password_assignment when it passes the same plausibility test as in
// text.
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
		if secretKey.MatchString(key) && plausiblePassword(v) {
			*out = append(*out, Finding{Rule: RulePassword, Path: path})
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
