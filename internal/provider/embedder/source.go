package embedder

import "context"

// sourceKey holds, in a request's context, the source whose chunks it
// embeds.
type sourceKey struct{}

// WithSource returns ctx carrying source: a Budget paces the requests
// made under it in source's lane, when CapSources capped it.
func WithSource(ctx context.Context, source string) context.Context {
	return context.WithValue(ctx, sourceKey{}, source)
}

func sourceOf(ctx context.Context) string {
	s, _ := ctx.Value(sourceKey{}).(string)
	return s
}
