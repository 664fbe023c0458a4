package secrets

import "strings"

// findPgpass appends the password of every line shaped as a .pgpass
// entry, hostname:port:database:username:password, where the host has a
// letter or a dot (or is *) and the port is a number or *. It looks only
// at lines with a colon, each once.
func findPgpass(name, text string, out []Match) []Match {
	for i := 0; i < len(text); {
		c := strings.IndexByte(text[i:], ':')
		if c < 0 {
			break
		}
		start := strings.LastIndexByte(text[:i+c], '\n') + 1
		end := strings.IndexByte(text[i+c:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += i + c
		}
		if s, e, ok := pgpassEntry(text[start:end]); ok {
			out = append(out, Match{Rule: name, Start: start + s, End: start + e})
		}
		i = end + 1
	}
	return out
}

// pgpassEntry returns the span of the password in line when line is a
// .pgpass entry.
func pgpassEntry(line string) (int, int, bool) {
	if strings.Count(line, ":") != 4 {
		return 0, 0, false
	}
	lead := len(line) - len(strings.TrimLeft(line, " \t"))
	fields := strings.Split(strings.TrimRight(line[lead:], " \t\r"), ":")
	host, port, pass := fields[0], fields[1], fields[4]
	for _, f := range fields {
		if f == "" || strings.ContainsAny(f, " \t") {
			return 0, 0, false
		}
	}
	if !pgpassHost(host) || (port != "*" && (len(port) > 5 || strings.Trim(port, "0123456789") != "")) ||
		!plausibleEntryPassword(pass) {
		return 0, 0, false
	}
	start := lead + len(host) + len(port) + len(fields[2]) + len(fields[3]) + 4
	return start, start + len(pass), true
}

// pgpassHost reports a host name, an IPv4 address or *; a field of
// digits alone (a time, a MAC address) is none.
func pgpassHost(h string) bool {
	if h == "*" {
		return true
	}
	named := false
	for i := 0; i < len(h); i++ {
		switch c := h[i]; {
		case c == '.' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			named = true
		case '0' <= c && c <= '9' || c == '-' || c == '_':
		default:
			return false
		}
	}
	return named
}
