package embedsim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// FetchCounts reads a running server's RequestCounts from GET
// /debug/requests; baseURL is the server's address, e.g.
// http://127.0.0.1:8089.
func FetchCounts(ctx context.Context, baseURL string) (RequestCounts, error) {
	var c RequestCounts
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/debug/requests", nil)
	if err != nil {
		return c, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return c, fmt.Errorf("embed-sim counts: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return c, fmt.Errorf("embed-sim counts: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		return c, fmt.Errorf("embed-sim counts: %w", err)
	}
	return c, nil
}
