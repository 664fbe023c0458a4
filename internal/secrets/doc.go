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
//     OPENSSH, ENCRYPTED, PKCS#8, PGP PRIVATE KEY BLOCK), BEGIN to END.
//   - aws_access_key_id: AKIA…/ASIA… and the other IAM id prefixes.
//   - aws_secret_access_key: 40 base64 characters assigned to a name that
//     says aws…secret…key.
//   - gcp_service_account: the "private_key" of a JSON object that also has
//     a "client_email", the shape of a service-account key file.
//   - github_token: ghp_, gho_, ghu_, ghs_, ghr_ and github_pat_ tokens.
//   - slack_token: xoxb-, xoxa-, xoxp-, xoxr-, xoxs- tokens.
//   - slack_webhook, discord_webhook, teams_webhook: incoming-webhook URLs,
//     whose path is the credential.
//   - stripe_key: live secret (sk_live_) and restricted (rk_live_) keys.
//     Test-mode keys (sk_test_) reach no money and are not flagged.
//   - openai_api_key: sk-… and sk-proj-… keys (at least 32 characters after
//     the prefix, with both letters and digits).
//   - jwt: three base64url segments whose first decodes to a JSON object.
//   - password_assignment: password, passwd or pwd (any case, any prefix
//     such as DB_) assigned with =, : or := to a value of at least six
//     characters. Values that stand for no password are not flagged:
//     templates and references (${VAR}, $VAR, {{ .x }}, %(x)s, <your
//     password>), masks (***, xxxxxx), code (os.Getenv("X"), cfg.Password),
//     type names (string) and well-known placeholders (changeme, password,
//     secret, example, redacted). A real password that happens to equal one
//     of those is weak enough to be public.
//
// # Cost
//
// Scan compiles nothing at run time and makes one pass per rule over the
// text with a substring search for the rule's literals ("-----BEGIN ",
// "ghp_", "eyJ", "pass", …). Its regular expression runs only at those
// places, on a window of bounded size, after a cheap check of the first
// bytes: the cost follows the number of candidates, not the length of the
// text, and matching is linear (RE2). The windows bound what a rule can
// match: a password value past 1 KiB, a JWT or service-account key past
// 16 KiB is not found whole (a private key block has no such bound).
package secrets
