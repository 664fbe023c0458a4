package secrets_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/content/secrets"
)

// Samples are assembled from pieces so that this file holds no string a
// credential scanner would take for a live secret.
var (
	alnum40   = "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7dEf0h"
	pemBody   = strings.Repeat("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"+"\n", 4)
	jwtHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	jwtClaims = base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"1234567890","name":"Jo"}`))
)

var (
	letters34 = "AbcdEfghIjklMnopQrstUvwxYzabCdefGh"
	hex64     = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	puttyKey  = "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: k\nPublic-Lines: 2\n" + pemBody[:106] +
		"Private-Lines: 1\n" + pemBody[:53] + "Private-MAC: " + hex64 + "\n"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// wrap breaks s into lines of width bytes, joined by sep.
func wrap(s string, width int, sep string) string {
	var lines []string
	for len(s) > width {
		lines, s = append(lines, s[:width]), s[width:]
	}
	return strings.Join(append(lines, s), sep)
}

func pemBlock(label string) string {
	return "-----BEGIN " + label + "-----\n" + pemBody + "-----END " + label + "-----"
}

// TestScanRules runs every rule on a sample in its real format and on a
// near miss that must not match.
func TestScanRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		text   string
		rule   string // "" when nothing may match
		secret string // the expected text[Start:End]; "" means the whole text
	}{
		{"rsa key", "key:\n" + pemBlock("RSA PRIVATE KEY") + "\nafter", secrets.RulePrivateKey, pemBlock("RSA PRIVATE KEY")},
		{"ec key", pemBlock("EC PRIVATE KEY"), secrets.RulePrivateKey, ""},
		{"dsa key", pemBlock("DSA PRIVATE KEY"), secrets.RulePrivateKey, ""},
		{"openssh key", pemBlock("OPENSSH PRIVATE KEY"), secrets.RulePrivateKey, ""},
		{"encrypted key", pemBlock("ENCRYPTED PRIVATE KEY"), secrets.RulePrivateKey, ""},
		{"pkcs8 key", pemBlock("PRIVATE KEY"), secrets.RulePrivateKey, ""},
		{"pgp key", pemBlock("PGP PRIVATE KEY BLOCK"), secrets.RulePrivateKey, ""},
		{"unterminated key", "x " + "-----BEGIN RSA PRIVATE KEY-----\n" + pemBody, secrets.RulePrivateKey, "-----BEGIN RSA PRIVATE KEY-----\n" + pemBody},
		{"ssh2 key", "---- BEGIN SSH2 ENCRYPTED " + "PRIVATE KEY ----\n" + pemBody + "---- END SSH2 ENCRYPTED PRIVATE KEY ----\nafter", secrets.RulePrivateKey,
			"---- BEGIN SSH2 ENCRYPTED " + "PRIVATE KEY ----\n" + pemBody + "---- END SSH2 ENCRYPTED PRIVATE KEY ----"},
		{"putty key", "x\n" + puttyKey + "after", secrets.RulePrivateKey, strings.TrimSuffix(puttyKey, "\n")},
		{"putty key cut short", puttyKey[:strings.Index(puttyKey, "Private-MAC")], secrets.RulePrivateKey, ""},
		{"base64 key", "tls.key: " + b64(pemBlock("RSA PRIVATE KEY")) + "\n", secrets.RulePrivateKey, b64(pemBlock("RSA PRIVATE KEY"))},
		{"base64 key wrapped", "key:\n  " + wrap(b64(pemBlock("EC PRIVATE KEY")), 76, "\n  ") + "\nend", secrets.RulePrivateKey, wrap(b64(pemBlock("EC PRIVATE KEY")), 76, "\n  ")},
		{"base64 key in base64", "config: " + b64("client-key-data: "+b64(pemBlock("PRIVATE KEY"))), secrets.RulePrivateKey, b64("client-key-data: " + b64(pemBlock("PRIVATE KEY")))},
		{"near miss: three layers of base64", b64(b64(b64(pemBlock("PRIVATE KEY")))), "", ""},
		{"near miss: base64 public key", "ca.pub: " + b64(pemBlock("PUBLIC KEY")), "", ""},
		{"near miss: putty in prose", "files start with PuTTY-User-Key-File-3: and the algorithm", "", ""},
		{"near miss: public key", pemBlock("PUBLIC KEY"), "", ""},
		{"near miss: certificate", pemBlock("CERTIFICATE"), "", ""},
		{"near miss: prose", "store the private key in a vault", "", ""},

		{"aws access key id", "id = AKIA" + "IOSFODNN7EXAMPLE\n", secrets.RuleAWSAccessKeyID, "AKIA" + "IOSFODNN7EXAMPLE"},
		{"aws session key id", "ASIA" + "Y34FZKBOKMUTVV7A", secrets.RuleAWSAccessKeyID, ""},
		{"near miss: short aws id", "AKIA" + "IOSFODNN7", "", ""},
		{"near miss: aws id inside a word", "XAKIA" + "IOSFODNN7EXAMPLE", "", ""},
		{"aws secret key", "aws_secret_access_key = " + alnum40 + "\n", secrets.RuleAWSSecretAccessKey, alnum40},
		{"aws secret key json", `{"AwsSecretAccessKey": "` + alnum40 + `"}`, secrets.RuleAWSSecretAccessKey, alnum40},
		{"aws secret key without aws", `"SecretAccessKey": "` + alnum40 + `"`, secrets.RuleAWSSecretAccessKey, alnum40},
		{"aws secret too short is generic", "aws_secret_access_key = " + alnum40[:39], secrets.RuleGenericSecret, alnum40[:39]},
		{"near miss: aws secret from env", "aws_secret_access_key = ${AWS_SECRET_ACCESS_KEY}", "", ""},

		{"gcp service account", `{"type": "service_account", "private_key": "-----BEGIN ` + `NOT A KEY-----\n` + strings.Repeat("A", 80) + `\n", "client_email": "svc@proj.iam.gserviceaccount.com"}`,
			secrets.RuleGCPServiceAccount, "-----BEGIN " + `NOT A KEY-----\n` + strings.Repeat("A", 80) + `\n`},
		{"near miss: gcp key without client_email", `{"private_key": "-----BEGIN ` + `NOT A KEY-----\n` + strings.Repeat("A", 80) + `"}`, "", ""},

		{"github classic", "token ghp_" + alnum40[:36], secrets.RuleGitHubToken, "ghp_" + alnum40[:36]},
		{"github oauth", "gho_" + alnum40[:36], secrets.RuleGitHubToken, ""},
		{"github user-to-server", "ghu_" + alnum40[:36], secrets.RuleGitHubToken, ""},
		{"github server-to-server", "ghs_" + alnum40[:36], secrets.RuleGitHubToken, ""},
		{"github refresh", "ghr_" + alnum40[:36], secrets.RuleGitHubToken, ""},
		{"github fine-grained", "github_pat_" + alnum40[:22] + "_" + alnum40 + alnum40[:19], secrets.RuleGitHubToken, ""},
		{"near miss: github prefix only", "ghp_" + alnum40[:20], "", ""},

		{"slack bot token", "xoxb-" + "123456789012-1234567890123-" + alnum40[:24], secrets.RuleSlackToken, ""},
		{"slack user token", "xoxp-" + "123456789012-1234567890123-" + alnum40[:24], secrets.RuleSlackToken, ""},
		{"slack app token", "xoxa-2-" + alnum40[:30], secrets.RuleSlackToken, ""},
		{"slack app-level token", "xapp-1-A0123456789-" + "1234567890123-" + alnum40, secrets.RuleSlackToken, ""},
		{"slack rotating token", "xoxe.xoxp-1-" + alnum40 + alnum40, secrets.RuleSlackToken, ""},
		{"slack refresh token", "xoxe-1-" + alnum40 + alnum40, secrets.RuleSlackToken, ""},
		{"near miss: slack-like word", "xoxo-hugs-and-kisses-forever", "", ""},
		{"near miss: slack prefix only", "xoxb-1234", "", ""},
		{"slack webhook", "POST https://hooks.slack.com/services/" + "T00000000/B00000000/" + alnum40[:24] + " now", secrets.RuleSlackWebhook, "https://hooks.slack.com/services/" + "T00000000/B00000000/" + alnum40[:24]},
		{"near miss: slack site", "see https://hooks.slack.com/ for docs", "", ""},
		{"discord webhook", "https://discord.com/api/webhooks/" + "123456789012345678/" + alnum40, secrets.RuleDiscordWebhook, ""},
		{"teams webhook", "https://contoso.webhook.office.com/webhookb2/" + "0a1b2c3d-e5f6@0a1b2c3d/IncomingWebhook/" + alnum40[:32], secrets.RuleTeamsWebhook, ""},

		{"stripe live secret", "sk_live_" + alnum40[:24], secrets.RuleStripeKey, ""},
		{"stripe live restricted", "rk_live_" + alnum40[:24], secrets.RuleStripeKey, ""},
		{"stripe webhook secret", "whsec_" + alnum40[:32], secrets.RuleStripeKey, ""},
		{"near miss: stripe test key", "sk_test_" + alnum40[:24], "", ""},

		{"gitlab token", "glpat-" + alnum40[:20], secrets.RuleGitLabToken, ""},
		{"near miss: gitlab words", "glpat-is-the-prefix-of-tokens", "", ""},
		{"npm token", "//registry.npmjs.org/:_authToken=npm_" + alnum40[:36], secrets.RuleNPMToken, "npm_" + alnum40[:36]},
		{"near miss: npm setting", "npm_config_cache_directory_for_the_builds_xyz", "", ""},
		{"hugging face token", "hf_" + letters34, secrets.RuleHuggingFaceToken, ""},
		{"near miss: hugging face function", "hf_hub_download", "", ""},
		{"google api key", "key=AIza" + alnum40[:30] + "_-Ab3&x", secrets.RuleGoogleAPIKey, "AIza" + alnum40[:30] + "_-Ab3"},
		{"near miss: google key too long", "AIza" + alnum40, "", ""},
		{"sendgrid key", "SG." + alnum40[:22] + "." + alnum40 + "Ab3", secrets.RuleSendGridKey, ""},
		{"near miss: sendgrid words", "SG.short.words", "", ""},
		{"azure storage key", "AccountName=a;AccountKey=" + b64(alnum40+alnum40[:24]) + ";EndpointSuffix=core.windows.net", secrets.RuleAzureStorageKey, b64(alnum40 + alnum40[:24])},
		{"near miss: azure key name", "set AccountKey= in the connection string", "", ""},

		{"openai legacy", "OPENAI_API_KEY=sk-" + alnum40 + alnum40[:8], secrets.RuleOpenAIKey, "sk-" + alnum40 + alnum40[:8]},
		{"openai project", "sk-proj-" + alnum40 + "_" + alnum40, secrets.RuleOpenAIKey, ""},
		{"near miss: openai words", "sk-this-is-not-a-key-just-a-long-slug-name", "", ""},
		{"near miss: openai inside a word", "task-" + alnum40, "", ""},

		{"jwt", "Authorization: Bearer " + jwtHeader + "." + jwtClaims + "." + alnum40 + "xyz", secrets.RuleJWT, jwtHeader + "." + jwtClaims + "." + alnum40 + "xyz"},
		{"near miss: jwt header not json", "eyJ" + alnum40[:20] + "." + jwtClaims + "." + alnum40, "", ""},

		{"password env", "DB_PASSWORD=s3cr3t-Hunter2\n", secrets.RulePassword, "s3cr3t-Hunter2"},
		{"passwd yaml", "  passwd: Tr0ub4dor&3x\n", secrets.RulePassword, "Tr0ub4dor"},
		{"password json", `{"password": "correct horse battery staple"}`, secrets.RulePassword, "correct horse battery staple"},
		{"password go", `password := "hunter22!"`, secrets.RulePassword, "hunter22!"},
		{"password with a leading dollar", "password=$ecretP4ss!", secrets.RulePassword, "$ecretP4ss!"},
		{"password like a variable", "password=$ecretP4ss", secrets.RulePassword, "$ecretP4ss"},
		{"password with brackets", `password: "Tr0ub4dor[3]&x"`, secrets.RulePassword, "Tr0ub4dor[3]&x"},
		{"password with parentheses", "password = Hunter(2)xyz", secrets.RulePassword, "Hunter(2)xyz"},
		{"password with yours", `password: "Yours7ruly-1987"`, secrets.RulePassword, "Yours7ruly-1987"},
		{"password in a query", "/login?user=bob&password=Kx7pQ2mZr9&next=/", secrets.RulePassword, "Kx7pQ2mZr9"},
		{"password in keywords", "host=db password = s3cr3t-Hunter2 dbname=x", secrets.RulePassword, "s3cr3t-Hunter2"},
		{"password on a command line", "mysql --password=s3cr3t-Hunter2 shop", secrets.RulePassword, "s3cr3t-Hunter2"},
		{"near miss: password in prose", "passwd: compat systemd\nWakeOnLanPassword= setting in the link", "", ""},
		{"near miss: password variable", "password=$DB_PASSWORD", "", ""},
		{"near miss: password index", `password: config["password"]`, "", ""},
		{"near miss: password for the reader", "password: your_password_here", "", ""},
		{"near miss: empty password", "password=\nuser=bob", "", ""},
		{"near miss: env reference", "password=${DB_PASSWORD}", "", ""},
		{"near miss: placeholder", "password: changeme", "", ""},
		{"near miss: template", `password: "{{ .Values.db.password }}"`, "", ""},
		{"near miss: mask", "password: ********", "", ""},
		{"near miss: code", "password = os.Getenv(\"DB_PASSWORD\")", "", ""},
		{"near miss: field", "Password: cfg.Password,", "", ""},
		{"near miss: short prose", "Password: none", "", ""},

		{"url password", "postgres://admin:pw@db/prod", secrets.RuleURLPassword, "pw"},
		{"url password without user", "redis://:pw@host:6379", secrets.RuleURLPassword, "pw"},
		{"near miss: url placeholder", "postgres://user:password@localhost/db", "", ""},
		{"near miss: url template", "postgres://app:${PGPASSWORD}@db/prod", "", ""},
		{"near miss: cvs pserver", "cvs://:pserver:anoncvs@sources.example.com:/cvs", "", ""},

		{"basic auth", "Authorization: Basic " + b64("deploy:"+alnum40[:12]), secrets.RuleBasicAuth, b64("deploy:" + alnum40[:12])},
		{"docker auth", `{"auths": {"r.example.com": {"auth": "` + b64("ci:"+alnum40[:12]) + `"}}}`, secrets.RuleBasicAuth, b64("ci:" + alnum40[:12])},
		{"near miss: basic auth placeholder", "Authorization: Basic " + b64("user:password"), "", ""},
		{"near miss: basic prose", "Basic authentication is enabled", "", ""},

		{"netrc", "machine api.example.com login deploy password " + alnum40[:12], secrets.RuleNetrc, alnum40[:12]},
		{"netrc lines", "machine git.example.com\n  login ci\n  password " + alnum40[:12] + "\n", secrets.RuleNetrc, alnum40[:12]},
		{"near miss: netrc example", "machine example.com password 123456", "", ""},
		{"pgpass", "db.internal:5432:prod:app:" + alnum40[:12] + "\n", secrets.RulePgpass, alnum40[:12]},
		{"pgpass wildcards", "x\n  *:*:*:postgres:" + alnum40[:12], secrets.RulePgpass, alnum40[:12]},
		{"near miss: pgpass header", "hostname:port:database:username:password", "", ""},
		{"near miss: pgpass times", "12:34:56:78:90", "", ""},

		{"generic api key", "API_KEY=" + alnum40[:32], secrets.RuleGenericSecret, alnum40[:32]},
		{"generic client secret", `clientSecret: "` + alnum40 + `"`, secrets.RuleGenericSecret, alnum40},
		{"generic token", "TOKEN=" + alnum40[:24], secrets.RuleGenericSecret, alnum40[:24]},
		{"generic header", "X-Api-Key: " + alnum40[:32], secrets.RuleGenericSecret, alnum40[:32]},
		{"generic hex", "SESSION_SECRET=" + hex64, secrets.RuleGenericSecret, hex64},
		{"near miss: generic placeholder", "API_KEY=your-api-key-here", "", ""},
		{"near miss: generic names", "primary_key = id_col_1234567\nmonkey=Ab3dEf6hIj9kLm2n\nmax_tokens: 4096", "", ""},
		{"near miss: generic identifier", "secretName: GateControllerTlsSecret\nclient_secret: GateControllerOauthClientSecretRef", "", ""},
		{"near miss: generic short hex", "GPG_KEY=0x4AA6D4E0\nAPI_KEY=" + hex64[:16], "", ""},
		{"near miss: generic phrase", `token: "the access token"`, "", ""},
		{"near miss: generic low entropy", "API_KEY=zzzz1111yyyy2222\nSECRET=release-2024-01-01-01", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := secrets.Scan(tt.text)
			if tt.rule == "" {
				if len(got) > 0 {
					m := got[0]
					t.Fatalf("matched %s at %q; want no match", m.Rule, tt.text[m.Start:m.End])
				}
				return
			}
			want := tt.secret
			if want == "" {
				want = tt.text
			}
			for _, m := range got {
				if m.Rule == tt.rule {
					if s := tt.text[m.Start:m.End]; s != want {
						t.Fatalf("%s matched %q; want %q", m.Rule, s, want)
					}
					return
				}
			}
			t.Fatalf("no %s match in %q; got %v", tt.rule, tt.text, got)
		})
	}
}

func TestRulesAreAllTested(t *testing.T) {
	t.Parallel()
	want := []string{
		secrets.RulePrivateKey, secrets.RuleAWSAccessKeyID, secrets.RuleAWSSecretAccessKey,
		secrets.RuleGCPServiceAccount, secrets.RuleGitHubToken, secrets.RuleSlackToken,
		secrets.RuleSlackWebhook, secrets.RuleDiscordWebhook, secrets.RuleTeamsWebhook,
		secrets.RuleStripeKey, secrets.RuleOpenAIKey, secrets.RuleJWT, secrets.RulePassword,
		secrets.RuleGitLabToken, secrets.RuleNPMToken, secrets.RuleHuggingFaceToken, secrets.RuleGoogleAPIKey,
		secrets.RuleSendGridKey, secrets.RuleAzureStorageKey, secrets.RuleURLPassword, secrets.RuleBasicAuth,
		secrets.RuleNetrc, secrets.RulePgpass, secrets.RuleGenericSecret,
	}
	if got := secrets.Rules(); !slices.Equal(got, want) {
		t.Fatalf("Rules() = %v; want %v (add a sample and a near miss to TestScanRules for each new rule)", got, want)
	}
}

// A 4096-bit RSA key is longer than a chunk: every chunk holding any of
// it must be flagged, not only the one with the BEGIN line.
func TestScanKeySplitAcrossChunks(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 4096)
	if err != nil {
		t.Fatal(err)
	}
	block := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	prose := strings.Repeat("The deployment notes continue here with ordinary words. ", 30)
	text := prose + "\n\n" + block + "\n" + prose

	matches := secrets.Scan(text)
	if len(matches) != 1 || matches[0].Rule != secrets.RulePrivateKey {
		t.Fatalf("matches = %v; want one private_key", matches)
	}
	keyStart := strings.Index(text, "-----BEGIN")
	keyEnd := strings.Index(text, "-----END RSA PRIVATE KEY-----") + len("-----END RSA PRIVATE KEY-----")
	if m := matches[0]; m.Start != keyStart || m.End != keyEnd {
		t.Fatalf("match spans [%d,%d); the key is [%d,%d)", m.Start, m.End, keyStart, keyEnd)
	}

	chunks := chunk.Split(text, chunk.Config{Size: 500, Overlap: 50, Unit: chunk.UnitChars})
	spans := make([]secrets.Span, len(chunks))
	var want []int
	for i, c := range chunks {
		spans[i] = secrets.Span{Start: c.Start, End: c.End}
		if c.Start < keyEnd && keyStart < c.End {
			want = append(want, i)
		}
	}
	if len(want) < 3 {
		t.Fatalf("the key touches %d chunks; the test needs it split across at least 3", len(want))
	}
	got := secrets.Touched(matches, spans)
	if !slices.Equal(got, want) {
		t.Fatalf("Touched = %v; want %v", got, want)
	}
	// The middle chunks hold only base64 lines: a per-chunk screen sees
	// nothing in them, which is why the scan is per document.
	if got := secrets.Scan(chunks[want[1]].Text); len(got) > 0 {
		t.Fatalf("chunk %d alone matches %v; the test wants a chunk only a document scan catches", want[1], got)
	}
}

func TestTouched(t *testing.T) {
	t.Parallel()
	matches := []secrets.Match{{Rule: "x", Start: 10, End: 20}, {Rule: "y", Start: 50, End: 51}}
	spans := []secrets.Span{{0, 10}, {5, 11}, {19, 30}, {20, 50}, {50, 60}, {45, 55}}
	if got, want := secrets.Touched(matches, spans), []int{1, 2, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("Touched = %v; want %v", got, want)
	}
	if got := secrets.Touched(nil, spans); got != nil {
		t.Fatalf("Touched with no matches = %v; want none", got)
	}
}

func TestScanMetadata(t *testing.T) {
	t.Parallel()
	meta := map[string]any{
		"title": "Runbook",
		"auth": map[string]any{
			"db_password": "s3cr3t-Hunter2",
			"headers":     []any{"Accept: */*", "Authorization: Bearer ghp_" + alnum40[:36]},
		},
		"password": "changeme",
		"count":    3,
		"crawler": map[string]any{
			"client_secret": alnum40[:20], "apiKey": alnum40[:16], "token": []any{alnum40[:12]},
			"private_key": "s3cr3t-Hunter2", "credentials": "bob:s3cr3t", "Authorization": "Bearer " + alnum40[:12],
			"author": "Jane Keeper", "auth": "oauth2", "token_count": "512", "secret": "${SECRET}",
		},
	}
	got := secrets.ScanMetadata(meta)
	want := []secrets.Finding{
		{Rule: secrets.RulePassword, Path: "auth.db_password"},
		{Rule: secrets.RuleGitHubToken, Path: "auth.headers[1]"},
		{Rule: secrets.RuleGenericSecret, Path: "crawler.Authorization"},
		{Rule: secrets.RuleGenericSecret, Path: "crawler.apiKey"},
		{Rule: secrets.RuleGenericSecret, Path: "crawler.client_secret"},
		{Rule: secrets.RuleGenericSecret, Path: "crawler.credentials"},
		{Rule: secrets.RuleGenericSecret, Path: "crawler.private_key"},
		{Rule: secrets.RuleGenericSecret, Path: "crawler.token[0]"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ScanMetadata = %v; want %v", got, want)
	}
	if got := secrets.ScanMetadata(map[string]any{"path": "docs/a.md", "bytes": 10}); got != nil {
		t.Fatalf("clean metadata: %v", got)
	}
	raw, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := secrets.ScanMetadataJSON(raw); err != nil || !slices.Equal(got, want) {
		t.Fatalf("ScanMetadataJSON = %v, %v; want %v", got, err, want)
	}
	for _, empty := range []string{"", "null", " "} {
		if got, err := secrets.ScanMetadataJSON([]byte(empty)); err != nil || got != nil {
			t.Errorf("ScanMetadataJSON(%q) = %v, %v; want nothing", empty, got, err)
		}
	}
	if _, err := secrets.ScanMetadataJSON([]byte(`["not an object"]`)); err == nil {
		t.Error("an array was accepted as metadata")
	}
}

func TestScanDocument(t *testing.T) {
	t.Parallel()
	text := "intro\n" + pemBlock("EC PRIVATE KEY") + "\noutro"
	keyStart, keyEnd := len("intro\n"), len("intro\n")+len(pemBlock("EC PRIVATE KEY"))
	spans := []secrets.Span{{0, 5}, {3, keyStart + 10}, {keyStart + 10, keyEnd - 5}, {keyEnd - 5, keyEnd}, {keyEnd + 1, len(text)}}
	got := secrets.ScanDocument(text, map[string]any{"path": "notes.md"}, spans)
	want := []secrets.Flag{{1, secrets.RulePrivateKey}, {2, secrets.RulePrivateKey}, {3, secrets.RulePrivateKey}}
	if !slices.Equal(got, want) {
		t.Fatalf("ScanDocument = %v; want %v", got, want)
	}
	got = secrets.ScanDocument("clean text", map[string]any{"db_password": "s3cr3t-Hunter2"}, []secrets.Span{{0, 5}, {5, 10}})
	want = []secrets.Flag{{0, secrets.RulePassword}, {1, secrets.RulePassword}}
	if !slices.Equal(got, want) {
		t.Fatalf("secret metadata: ScanDocument = %v; want every chunk flagged %v", got, want)
	}
	if got := secrets.ScanDocument("clean text", map[string]any{"title": "x"}, []secrets.Span{{0, 10}}); got != nil {
		t.Fatalf("clean document flagged: %v", got)
	}
	withhold := secrets.Config{WithholdDocument: true}
	got = withhold.ScanDocument(text, nil, spans)
	want = []secrets.Flag{{0, secrets.RulePrivateKey}, {1, secrets.RulePrivateKey}, {2, secrets.RulePrivateKey}, {3, secrets.RulePrivateKey}, {4, secrets.RulePrivateKey}}
	if !slices.Equal(got, want) {
		t.Fatalf("WithholdDocument: ScanDocument = %v; want every chunk flagged %v", got, want)
	}
	if got := withhold.ScanDocument("clean text", nil, []secrets.Span{{0, 10}}); got != nil {
		t.Fatalf("WithholdDocument flagged a clean document: %v", got)
	}
}

func BenchmarkScan(b *testing.B) {
	para := "Ordinary prose about deployments, passwords policies and keys, sk-learn and tasks.\n"
	clean := strings.Repeat(para, (1<<20)/len(para))
	dirty := clean[:len(clean)/2] + pemBlock("RSA PRIVATE KEY") + "\nDB_PASSWORD=s3cr3t-Hunter2\nghp_" + alnum40[:36] + "\n" + clean[len(clean)/2:]
	for _, bc := range []struct {
		name, text string
	}{{"clean", clean}, {"with-secrets", dirty}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.text)))
			for b.Loop() {
				secrets.Scan(bc.text)
			}
		})
	}
}
