package s3source

import (
	"encoding/json"
	"net/url"
	"strings"
)

// event is what the source reads of an S3 event notification: AWS's
// JSON records, as S3, Ceph and Versity's gateway publish them.
type event struct {
	Records []struct {
		EventName string `json:"eventName"`
		S3        struct {
			Bucket struct {
				Name string `json:"name"`
			} `json:"bucket"`
			Object struct {
				Key string `json:"key"`
			} `json:"object"`
		} `json:"s3"`
	} `json:"Records"`
}

// Touches reports whether the event notification data names an object
// under l: a put or a delete the source should sync. Data that is not
// an event, such as a store's test event, touches nothing. Keys are
// compared as given and URL-decoded, as AWS encodes them.
func (l Location) Touches(data []byte) bool {
	var e event
	if json.Unmarshal(data, &e) != nil {
		return false
	}
	for _, r := range e.Records {
		if r.S3.Bucket.Name != l.Bucket || !strings.HasPrefix(r.EventName, "ObjectCreated:") && !strings.HasPrefix(r.EventName, "ObjectRemoved:") &&
			!strings.HasPrefix(r.EventName, "s3:ObjectCreated:") && !strings.HasPrefix(r.EventName, "s3:ObjectRemoved:") {
			continue
		}
		key := r.S3.Object.Key
		if decoded, err := url.QueryUnescape(key); err == nil && strings.HasPrefix(decoded, l.Prefix) {
			return true
		}
		if strings.HasPrefix(key, l.Prefix) {
			return true
		}
	}
	return false
}
