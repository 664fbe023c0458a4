// Package secrets finds credentials in whole documents, so that no chunk of
// a document holding one is ever sent to the embedder or stored.
//
// Screening chunk by chunk is not enough: a 4096-bit RSA key is longer than
// most chunks, and only the chunk with its BEGIN line looks like a key. Scan
// reads the whole text once and reports the byte span of every secret it
// finds — for a private key the whole BEGIN…END block, or from BEGIN to the
// end of the text when the END line is missing — and Touched maps those
// spans onto the chunks cut from the same text. Every chunk a match
// overlaps, even by one byte, holds part of a secret.
//
// # Wiring it in
//
// The producer sees the whole document before it chunks it, and screens
// it in one call with the text it splits:
//
//	chunks := chunk.Split(doc.Text, cfg)
//	spans := make([]secrets.Span, len(chunks))
//	for i, c := range chunks {
//		spans[i] = secrets.Span{Start: c.Start, End: c.End}
//	}
//	for _, f := range secrets.ScanDocument(doc.Text, doc.Metadata, spans) {
//		// park chunk f.Chunk as an escalation under rule f.Rule
//	}
//
// ScanDocument is Scan, ScanMetadata and Touched together. A secret in the
// metadata flags every chunk, since each chunk carries the document's
// metadata; ScanMetadataJSON reads metadata still encoded, as a chunk job
// carries it. The spans must be offsets in the very string scanned. Name
// the rule in errors and logs; never the matched text.
//
// # Rules
//
// Each rule has a name, stable for dashboards and dead-letter classes:
//
//   - private_key: a PEM or PGP private key block of any type (RSA, EC, DSA,
//     OPENSSH, ENCRYPTED, PKCS#8, PGP PRIVATE KEY BLOCK), BEGIN to END; an
//     SSH2 (RFC 4716 style) "---- BEGIN SSH2 … PRIVATE KEY ----" block; a
//     PuTTY key file (PuTTY-User-Key-File-2 or -3 with its Private-Lines).
//   - aws_access_key_id: AKIA…/ASIA… and the other IAM id prefixes.
//   - aws_secret_access_key: 40 base64 characters assigned to a name that
//     says aws…secret…key or secret…access…key (SecretAccessKey).
//   - gcp_service_account: the "private_key" of a JSON object that also has
//     a "client_email", the shape of a service-account key file.
//   - github_token: ghp_, gho_, ghu_, ghs_, ghr_ and github_pat_ tokens.
//   - slack_token: xoxb-, xoxa-, xoxp-, xoxr-, xoxs-, xoxe- and xapp-
//     tokens.
//   - slack_webhook, discord_webhook, teams_webhook: incoming-webhook URLs,
//     whose path is the credential.
//   - stripe_key: live secret (sk_live_) and restricted (rk_live_) keys and
//     webhook signing secrets (whsec_). Test-mode keys (sk_test_) reach no
//     money and are not flagged.
//   - openai_api_key: sk-… and sk-proj-… keys (at least 32 characters after
//     the prefix, with both letters and digits).
//   - jwt: three base64url segments whose first decodes to a JSON object.
//   - gitlab_token (glpat-, gldt-, glrt-, glptt-, gloas-), npm_token (npm_),
//     huggingface_token (hf_, api_org_), google_api_key (AIza, 39
//     characters), sendgrid_api_key (SG.x.y), azure_storage_key (the
//     AccountKey= or SharedAccessKey= of a connection string).
//   - password_assignment: password, passwd or pwd (any case, any prefix
//     such as DB_) assigned with =, : or := to a value of at least six
//     characters, in code, configuration, a query string or a key=value
//     connection string. Values that stand for no password are not
//     flagged: templates and references (${VAR}, $VAR, {{ .x }}, %(x)s,
//     <your password>), masks (***, xxxxxx), code (os.Getenv("X"),
//     cfg.Password, config["password"]), paths to a secrets file, type
//     names (string) and placeholders (changeme, password, secret,
//     your_password_here, mypassword, 123456). A real password that
//     happens to equal one of those is weak enough to be public. A bare
//     value that plain words follow on its line ("passwd: compat
//     systemd") is prose.
//   - url_password: the password of a URL's user info
//     (postgres://admin:pw@db/prod, redis://:pw@host), any length, unless
//     it stands for none.
//   - basic_auth: Authorization: Basic and Docker config.json "auth"
//     values that decode to user:password.
//   - netrc_password: the password of a .netrc machine entry.
//   - pgpass_password: the password of a .pgpass line,
//     host:port:database:user:password.
//   - generic_secret: a value assigned to a name whose last word is key,
//     secret or token (API_KEY, clientSecret, X-Api-Key, TOKEN; not a bare
//     key, nor primary_key, public_key, next_token and the like) that
//     looks generated: at least 12 characters without white space, with
//     digits (or both cases and symbols), not a reference or a path, and a
//     Shannon entropy of at least 3.5 bits a character (hex: 32 characters
//     or more, 3 bits).
//
// Metadata is screened value by value with every rule, and a value under
// a key named like a password (password_assignment) or another
// credential (secret, token, api_key, private_key, credentials, auth,
// authorization…: generic_secret) is flagged when it is a plausible
// password.
//
// # Encoded secrets
//
// A base64 run of at least 40 characters, possibly wrapped over lines
// (base64 -w, YAML block scalars), is decoded and scanned again: a key in
// a Kubernetes secret (tls.key: LS0tLS1CRUdJTi…) or a kubeconfig
// (client-key-data) is found, and reported over the whole encoded run
// under the rule that found it in the decoded text. Decoding stops after
// two layers (a kubeconfig inside a secret) and at 64 KiB of each run;
// decoded text that is not UTF-8 (a certificate's DER, an image) is not
// scanned. Each layer is at most three quarters of the one above, so the
// cost stays linear.
//
// # Cost
//
// Scan compiles nothing at run time and makes one pass per rule over the
// text with a substring search for the rule's literals ("-----BEGIN ",
// "ghp_", "eyJ", "pass", …). Its regular expression runs only at those
// places, on a window of bounded size, after a cheap check of the first
// bytes: the cost follows the number of candidates, not the length of the
// text, and matching is linear (RE2). The pgpass rule and the base64
// layer each make one more pass over the bytes. The windows bound what a
// rule can match: a password value past 1 KiB, a JWT or service-account
// key past 16 KiB is not found whole (a private key block has no such
// bound).
package secrets
