package s3source

import (
	"fmt"
	"net/url"
	"strings"
)

// Location is a bucket and a key prefix: s3://bucket/prefix.
type Location struct {
	Bucket string
	// Prefix selects the keys read; empty reads the whole bucket.
	Prefix string
}

// ParseLocation parses s3://bucket or s3://bucket/prefix.
func ParseLocation(s string) (Location, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return Location{}, fmt.Errorf("--s3 %q: name a bucket and an optional prefix, such as s3://corpus/docs/", s)
	}
	return Location{Bucket: u.Host, Prefix: strings.TrimPrefix(u.Path, "/")}, nil
}

// String is the location as s3://bucket/prefix.
func (l Location) String() string { return "s3://" + l.Bucket + "/" + l.Prefix }

// URI is the s3:// address of key in l's bucket.
func (l Location) URI(key string) string { return "s3://" + l.Bucket + "/" + key }
