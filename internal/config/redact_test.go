package config_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/config"
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
