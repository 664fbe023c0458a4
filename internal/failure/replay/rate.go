package replay

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseRate reads a replay rate as an operator writes it: "" (no limit),
// N, N/s or N/m, and returns it per second, for Scope.RatePerSecond.
func ParseRate(s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	num, per := s, time.Second
	if n, unit, ok := strings.Cut(s, "/"); ok {
		num = n
		switch unit {
		case "s":
		case "m":
			per = time.Minute
		default:
			return 0, fmt.Errorf("%q: the unit after / is s or m (50/s, 600/m)", s)
		}
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || !(n > 0) || math.IsInf(n, 0) {
		return 0, fmt.Errorf("%q: want a positive number of replays per second or minute (50/s, 600/m)", s)
	}
	perSecond := n / per.Seconds()
	if perSecond > MaxRatePerSecond {
		return 0, fmt.Errorf("%q: at most %d/s", s, MaxRatePerSecond)
	}
	return perSecond, nil
}
