package demo

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// scrapeCounter reads one sample, a name and its full label set as the
// exposition format prints them, from the metrics at addr; 0 when addr
// does not export it.
func scrapeCounter(addr, series string) (float64, error) {
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, fmt.Errorf("scrape %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("scrape %s: %s", addr, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		raw, ok := strings.CutPrefix(sc.Text(), series+" ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(raw)[0], 64)
		if err != nil {
			return 0, fmt.Errorf("scrape %s: %s: %w", addr, series, err)
		}
		return v, nil
	}
	return 0, sc.Err()
}
