package producer_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/content/extract"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/config/configtest"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	configtest.Run(t, []configtest.Case[producer.Config]{
		{Name: "defaults", Config: producer.Config{SourceID: "docs"}},
		{Name: "longest confirm delay", Config: producer.Config{SourceID: "docs", ConfirmDelay: producer.MaxConfirmDelay}},
		{Name: "no source", Want: "--source is required: name the corpus, e.g. --source docs"},
		{Name: "source with a space", Config: producer.Config{SourceID: "my docs"},
			Want: `--source "my docs": invalid character ' ' at byte 2`},
		{Name: "source with a space, the fix", Config: producer.Config{SourceID: "my docs"},
			Want: "may hold only A-Z a-z 0-9 _ -: rename it, e.g. --source my-docs"},
		{Name: "source with nothing usable", Config: producer.Config{SourceID: "..."}, Want: "rename it, e.g. --source docs"},
		{Name: "negative confirm delay", Config: producer.Config{SourceID: "docs", ConfirmDelay: -time.Second},
			Want: "--confirm-delay -1s: use a duration up to 10s"},
		{Name: "confirm delay near the sweeper's grace", Config: producer.Config{SourceID: "docs", ConfirmDelay: 30 * time.Second},
			Want: "well under the sweeper's OWED_GRACE"},
		{Name: "fast heartbeat", Config: producer.Config{SourceID: "docs", HeartbeatInterval: 100 * time.Millisecond, HeartbeatTimeout: time.Second}},
		{Name: "heartbeat timeout of three beats", Config: producer.Config{SourceID: "docs", HeartbeatInterval: 10 * time.Second, HeartbeatTimeout: 30 * time.Second}},
		{Name: "negative heartbeat interval", Config: producer.Config{SourceID: "docs", HeartbeatInterval: -time.Second},
			Want: "--run-heartbeat-interval -1s: use a positive duration"},
		{Name: "heartbeat timeout under three beats", Config: producer.Config{SourceID: "docs", HeartbeatInterval: 20 * time.Second},
			Want: "--run-heartbeat-timeout 30s: use at least 3 heartbeat intervals (1m0s)"},
		{Name: "negative heartbeat timeout", Config: producer.Config{SourceID: "docs", HeartbeatTimeout: -time.Second},
			Want: "--run-heartbeat-timeout -1s"},
	})
}

// A negative extraction limit is refused, naming its flag.
func TestServiceConfigValidatesExtractLimits(t *testing.T) {
	t.Parallel()
	docs := producer.Config{SourceID: "docs"}
	configtest.Run(t, []configtest.Case[*producer.ServiceConfig]{
		{Name: "defaults", Config: &producer.ServiceConfig{Config: docs}},
		{Name: "set", Config: &producer.ServiceConfig{Config: docs, Extract: extract.Limits{Timeout: time.Second, MaxPages: 10}}},
		{Name: "negative timeout", Config: &producer.ServiceConfig{Config: docs, Extract: extract.Limits{Timeout: -time.Second}},
			Want: "--extract-timeout is negative: set a positive value, such as the default 2m0s"},
		{Name: "negative memory", Config: &producer.ServiceConfig{Config: docs, Extract: extract.Limits{MaxMemory: -1}},
			Want: "--extract-max-memory is negative"},
	})
}

// The S3 source's settings: a location, a page size S3 serves, one
// source at a time, and --follow with a source to follow.
func TestServiceConfigValidatesS3(t *testing.T) {
	t.Parallel()
	docs := producer.Config{SourceID: "docs"}
	s3 := func(url string, page int) producer.S3Settings { return producer.S3Settings{URL: url, PageSize: page} }
	configtest.Run(t, []configtest.Case[*producer.ServiceConfig]{
		{Name: "a prefix", Config: &producer.ServiceConfig{Config: docs, S3: s3("s3://corpus/docs/", 1000)}},
		{Name: "following a prefix", Config: &producer.ServiceConfig{Config: docs, S3: s3("s3://corpus", 1), Follow: true}},
		{Name: "not an s3 URL", Config: &producer.ServiceConfig{Config: docs, S3: s3("https://corpus/docs", 1000)},
			Want: `--s3 "https://corpus/docs": name a bucket and an optional prefix, such as s3://corpus/docs/`},
		{Name: "a page S3 does not serve", Config: &producer.ServiceConfig{Config: docs, S3: s3("s3://corpus", 5000)},
			Want: "--s3-page-size 5000: set it between 1 and 1000"},
		{Name: "two sources", Config: &producer.ServiceConfig{Config: producer.Config{SourceID: "articles"}, S3: s3("s3://corpus", 1000), TableSource: "articles"},
			Want: "--s3 and --table-source articles: a producer reads one source; drop one of them"},
		{Name: "a directory's patterns", Config: &producer.ServiceConfig{Config: docs, S3: s3("s3://corpus", 1000), Include: []string{"*.md"}},
			Want: "narrow --s3's prefix instead"},
		{Name: "following nothing", Config: &producer.ServiceConfig{Config: docs, Follow: true},
			Want: "--follow needs --table-source or --s3: name the source to follow"},
	})
}
