package cli

import (
	"context"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/platform/config"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/provider/tokens"
	"github.com/sluicehq/sluice/pkg/classify"
)

// The names of doctor's embedder checks.
const (
	embedderCheck   = "embedder"
	tokenizerCheck  = "tokenizer"
	dimensionsCheck = "dimensions"
)

// doctorInput is the one short input doctor embeds.
const doctorInput = "sluice doctor"

// embedderProbe is what the embedder answered doctor: the dimension of
// its vector, 0 when it did not answer one.
type embedderProbe struct {
	dims int
}

// checkEmbedder embeds one short input as the consumer would (EMBEDDER_URL,
// EMBEDDER_MODEL, EMBEDDING_DIMS asked for) and says whether the model's
// tokens are counted exactly.
func checkEmbedder(ctx context.Context, o doctorOptions) (embedderProbe, []check) {
	var probe embedderProbe
	c := bounded(ctx, o, func(ctx context.Context) check {
		var c check
		probe.dims, c = probeEmbedder(ctx, o)
		return c
	})
	return probe, []check{c, checkTokenizer(o.embedder.Model)}
}

// probeEmbedder posts one input to /embeddings through the embedder
// client and returns its vector's dimension.
func probeEmbedder(ctx context.Context, o doctorOptions) (int, check) {
	s := o.embedder
	if err := s.Validate(); err != nil {
		return 0, failCheck(embedderCheck, "", "%v", err)
	}
	client, err := embedder.NewOpenAI(s.Client(s.Model, o.EmbeddingDims))
	if err != nil {
		return 0, failCheck(embedderCheck, "", "%v", err)
	}
	start := time.Now()
	vecs, err := client.Embed(ctx, []string{doctorInput})
	if err != nil {
		return 0, embedderFailure(o, err)
	}
	return len(vecs[0]), okCheck(embedderCheck, "%s answered %s with a vector of %d dimensions in %s",
		config.RedactURL(s.URL), s.Model, len(vecs[0]), time.Since(start).Round(time.Millisecond))
}

// embedderFailure says which embedder setting an error of the probe
// points at, and how to fix it.
func embedderFailure(o doctorOptions, err error) check {
	s, url := o.embedder, config.RedactURL(o.embedder.URL)
	err = config.RedactError(err)
	switch classify.Classify(err).Class {
	case classify.ClassDimensionMismatch:
		return failCheck(embedderCheck, "EMBEDDER_MODEL", "EMBEDDER_MODEL %s does not answer vectors of EMBEDDING_DIMS=%d dimensions (%v): choose a model whose vectors have %d dimensions or that honours the dimensions parameter, or migrate a new database for the model's own dimension",
			s.Model, o.EmbeddingDims, err, o.EmbeddingDims)
	case classify.ClassUnauthorized:
		return failCheck(embedderCheck, "EMBEDDER_API_KEY", "%s refused the request (%v): set EMBEDDER_API_KEY to a key that API accepts for %s", url, err, s.Model)
	case classify.ClassNotFound:
		return failCheck(embedderCheck, "EMBEDDER_URL", "%s answered not found (%v): EMBEDDER_URL is the API's base, such as https://api.openai.com/v1, and EMBEDDER_MODEL a model it serves", url, err)
	case classify.ClassBadRequest, classify.ClassUnprocessable:
		return badRequestCheck(o, url, err)
	case classify.ClassTimeout:
		return failCheck(embedderCheck, "EMBEDDER_URL", "%s did not answer within %s (%v): check that EMBEDDER_URL names a reachable embeddings API", url, o.timeout, err)
	case classify.ClassConnection:
		return failCheck(embedderCheck, "EMBEDDER_URL", "nothing answers at EMBEDDER_URL %s (%v): start the embeddings API there, or fix the host and port", url, err)
	}
	return failCheck(embedderCheck, "EMBEDDER_URL", "%s: %v", url, err)
}

// checkTokenizer says whether EMBEDDER_MODEL's tokens are counted with its
// own vocabulary or estimated.
func checkTokenizer(model string) check {
	c, exact := tokens.ForModel(model)
	if exact {
		return okCheck(tokenizerCheck, "EMBEDDER_MODEL %s counts tokens with %s", model, c.Encoding())
	}
	return warnCheck(tokenizerCheck, "EMBEDDER_MODEL", "no tokenizer known for EMBEDDER_MODEL %s: token counts are estimates (about four characters a token), so chunk sizes and token budgets are approximate; keep chunks well below the model's context limit", model)
}

// checkDimsAgreement holds the dimension the embedder answered against
// the schema's.
func checkDimsAgreement(o doctorOptions, pg postgresFindings, probe embedderProbe) check {
	switch {
	case pg.schemaDims == 0:
		return skipped(dimensionsCheck, "the schema's embedding dimension is unknown (see the PostgreSQL checks)")
	case probe.dims == 0:
		return skipped(dimensionsCheck, "the embedder answered no vector (see the embedder check)")
	case probe.dims != pg.schemaDims:
		return failCheck(dimensionsCheck, "EMBEDDING_DIMS", "EMBEDDER_MODEL %s answers %d dimensions (EMBEDDING_DIMS=%d asked for) but the schema holds %d: set EMBEDDING_DIMS=%d if the model takes it, or migrate a new database for %d",
			o.embedder.Model, probe.dims, o.EmbeddingDims, pg.schemaDims, pg.schemaDims, probe.dims)
	}
	return okCheck(dimensionsCheck, "the embedder's %d dimensions are the schema's", probe.dims)
}

// badRequestCheck says which setting a 400 or 422 to the probe points at:
// the dimensions parameter when the answer names it, the model otherwise.
func badRequestCheck(o doctorOptions, url string, err error) check {
	s := o.embedder
	if s.SendDims && strings.Contains(strings.ToLower(err.Error()), "dimensions") {
		return failCheck(embedderCheck, "EMBEDDER_SEND_DIMS", "%s refused the dimensions parameter for %s (%v): set EMBEDDER_SEND_DIMS=false if the model's own vectors have EMBEDDING_DIMS=%d dimensions, or choose a model that takes it",
			url, s.Model, err, o.EmbeddingDims)
	}
	return failCheck(embedderCheck, "EMBEDDER_MODEL", "%s rejected one short input for %s (%v): check that EMBEDDER_MODEL names an embedding model the API serves, and that EMBEDDER_ENCODING suits the API (auto finds out)",
		url, s.Model, err)
}
