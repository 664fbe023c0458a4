package drill

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/internal/dev/simtype"
)

// simClient reads embed-sim's request history and metrics.
type simClient struct {
	base   string
	client *http.Client
}

func newSimClient(embedderURL string, client *http.Client) *simClient {
	base := strings.TrimSuffix(strings.TrimSuffix(embedderURL, "/"), "/v1")
	return &simClient{base: base, client: client}
}

func (s *simClient) get(ctx context.Context, path string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("embed-sim %s: %w", s.base, err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("embed-sim %s: %w (the drill needs embed-sim as the embedder)", s.base, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("embed-sim %s%s: HTTP %d (the drill needs embed-sim as the embedder)", s.base, path, resp.StatusCode)
	}
	return resp.Body, nil
}

// requestsCarrying returns the requests that carried the input whose
// SHA-256 is h.
func (s *simClient) requestsCarrying(ctx context.Context, h string) ([]simtype.RequestRecord, error) {
	body, err := s.get(ctx, "/debug/requests?input_sha256="+url.QueryEscape(h))
	if err != nil {
		return nil, err
	}
	defer body.Close()
	var out simtype.RequestsFor
	if err := json.NewDecoder(body).Decode(&out); err != nil {
		return nil, fmt.Errorf("embed-sim request history: %w", err)
	}
	return out.Requests, nil
}

// requestsByCode reads sluice_embedsim_requests_total by status code.
func (s *simClient) requestsByCode(ctx context.Context) (map[string]float64, error) {
	body, err := s.get(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	defer body.Close()
	const prefix = `sluice_embedsim_requests_total{code="`
	out := map[string]float64{}
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), prefix)
		if !ok {
			continue
		}
		code, value, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			out[code] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("embed-sim metrics: %w", err)
	}
	return out, nil
}

// checkMetrics checks that embed-sim's counters moved at least as the
// drill's own requests should have moved them.
func checkMetrics(before, after map[string]float64) []Check {
	var out []Check
	for _, want := range []struct {
		code string
		n    float64
	}{{"503", 3}, {"404", 1}, {"400", 1}, {"200", 1}} {
		d := after[want.code] - before[want.code]
		out = append(out, check("sluice_embedsim_requests_total{code=\""+want.code+"\"} rose", d >= want.n,
			"by %g (at least %g)", d, want.n))
	}
	return out
}
