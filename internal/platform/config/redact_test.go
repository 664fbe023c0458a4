package config_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/platform/config"
)

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"https://hooks.slack.com/services/T000/B000/XXXXsecretXXXX", "https://hooks.slack.com/…redacted"},
		{"https://discord.com/api/webhooks/123/secret-token", "https://discord.com/…redacted"},
		{"https://contoso.webhook.office.com/webhookb2/abc@def/IncomingWebhook/secret/xyz", "https://contoso.webhook.office.com/…redacted"},
		{"https://alerts.example.com:8443/hook?token=secret", "https://alerts.example.com:8443/…redacted"},
		{"https://user:secret@alerts.example.com", "https://alerts.example.com/…redacted"},
		{"http://alerts.example.com/", "http://alerts.example.com"},
		{"http://alerts.example.com", "http://alerts.example.com"},
		{"not a url secret", "…redacted"},
		{"", "…redacted"},
	} {
		if got := config.RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// Redact keeps a connection string's shape where it can read it, and
// hides every credential, whatever the form; what it cannot read it hides
// whole.
func TestRedact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"url password", "postgres://app:s3cret@db:5432/sluice", "postgres://app:xxxxx@db:5432/sluice"},
		{"url empty user", "redis://:s3cret@cache:6379/0", "redis://:xxxxx@cache:6379/0"},
		{"url token as user", "nats://s3cretToken@nats:4222", "nats://xxxxx@nats:4222"},
		{"url without credentials", "postgres://db:5432/sluice?sslmode=verify-full", "postgres://db:5432/sluice?sslmode=verify-full"},
		{"query password", "postgres://app@db/sluice?sslmode=require&password=s3cret", "postgres://xxxxx@db/sluice?sslmode=require&password=xxxxx"},
		{"query names", "postgres://db/x?PASSWD=s3cret&pwd=s3cret&sslpassword=s3cret&token=s3cret&secret=s3cret&db_password=s3cret",
			"postgres://db/x?PASSWD=xxxxx&pwd=xxxxx&sslpassword=xxxxx&token=xxxxx&secret=xxxxx&db_password=xxxxx"},
		{"query escaped name", "postgres://db/x?pass%77ord=s3cret", "postgres://db/x?pass%77ord=xxxxx"},
		{"query bad escape", "postgres://db/x?p%zzw=s3cret&sslmode=disable", "postgres://db/x?xxxxx&sslmode=disable"},
		{"query bare credential", "postgres://db/x?s3cret-token", "postgres://db/x?xxxxx"},
		{"fragment", "https://host/cb#access_token=s3cret", "https://host/cb#xxxxx"},
		{"bad escape in password", "postgres://app:s3cret%zz@db/sluice", "postgres://…redacted"},
		{"bad escape in host", "nats://u:s3cret@nats%zz:4222", "nats://…redacted"},
		{"no scheme", "app:s3cret@db:5432/sluice", "…redacted"},
		{"bare word", "s3cret", "…redacted"},
		{"keywords", "host=db port=5432 user=app password=s3cret dbname=sluice", "host=db port=5432 user=app password=xxxxx dbname=sluice"},
		{"keywords with spaces and quotes", "host = db  password = 's3 cr\\'et' sslmode=require", "host=db password=xxxxx sslmode=require"},
		{"keywords other names", "host=db PASSWORD=s3cret sslpassword=s3cret token=s3cret secret=s3cret passwd=s3cret pwd=s3cret",
			"host=db PASSWORD=xxxxx sslpassword=xxxxx token=xxxxx secret=xxxxx passwd=xxxxx pwd=xxxxx"},
		{"keywords unterminated quote", "host=db password='s3cret", "…redacted"},
		{"keywords key without value", "host=db s3cret", "…redacted"},
		{"empty", "", ""},
	} {
		got := config.Redact(tc.in)
		if got != tc.want {
			t.Errorf("%s: Redact(%q) = %q; want %q", tc.name, tc.in, got, tc.want)
		}
		if strings.Contains(got, "s3cret") || strings.Contains(got, "s3 cr") {
			t.Errorf("%s: Redact(%q) = %q leaks the secret", tc.name, tc.in, got)
		}
	}
}

func TestRedactError(t *testing.T) {
	t.Parallel()
	const token = "T0KEN-abc123"
	raw := "http://127.0.0.1:1/services/" + token + "?sig=" + token
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, cause := http.DefaultClient.Do(req) // nothing listens on port 1
	if cause == nil {
		t.Fatal("a POST to port 1 succeeded")
	}
	wrapped := fmt.Errorf("post alert: %w", cause)
	got := config.RedactError(wrapped)
	if strings.Contains(got.Error(), token) {
		t.Fatalf("redacted error still holds the token: %v", got)
	}
	if !strings.Contains(got.Error(), "http://127.0.0.1:1/…redacted") || !strings.HasPrefix(got.Error(), "post alert: ") {
		t.Errorf("redacted error lost its context: %v", got)
	}
	var ue *url.Error
	if !errors.As(got, &ue) || !errors.Is(got, cause) {
		t.Errorf("redacted error does not unwrap to its cause: %v", got)
	}
	plain := errors.New("no url here")
	if config.RedactError(plain) != plain || config.RedactError(nil) != nil {
		t.Error("an error without a URL was changed")
	}
}
