// Package console serves the triage console: a small server-rendered web
// application over the dead-letter queue for operators and viewers.
//
// It shows the DLQ's depth, shape and arrivals, lists and searches dead
// letters with filters that live in the URL and keyset pages that stay
// fast at a million rows, shows one dead letter with its history, and lets
// an operator replay everything a filter matches — dry-run counts first,
// then a reason, then the same code as `sluice dlq replay --execute`
// (internal/failure/replay) — and pause or resume replays. Every action is written
// to replay_audit with the principal who asked. It also lists ingest runs
// and bulk mode's batches (from bulk_batches alone: the console's role
// never reads the batches' members).
//
// Guarantees: every request but the login page and static assets needs a
// token (a bearer header, or a session cookie set by the login form or a
// one-time sign-in code: HttpOnly, SameSite=Strict, and over HTTPS Secure
// with the __Host- prefix and HSTS); a long-lived token is never taken
// from a URL; tokens are compared in constant time and a client that
// guesses wrong backs off, doubling its wait each time; sessions are
// bounded in number; after sign-in the console redirects only to a path
// of its own; viewers read but never see payload text, job metadata nor
// error details (a provider's error can quote the request), and never
// act; every state-changing request (the audited dry run included) is a
// POST, and from a cookie session carries a synchronizer token tied to
// the session and passes an Origin / Sec-Fetch-Site check; flash messages
// come from a fixed set; the text of an escalated dead letter is never
// rendered, to anyone; every statement runs under a statement_timeout;
// responses are Cache-Control: no-store; request bodies are bounded; and
// the request log never carries query strings, chunk text or tokens.
package console
