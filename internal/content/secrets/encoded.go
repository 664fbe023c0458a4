package secrets

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"
)

// Encoded secrets: a private key in a Kubernetes secret or a kubeconfig
// (client-key-data), a .env file in a config map, are base64 of text
// that holds a secret. Scan decodes every long base64 run and scans the
// decoded text again, within bounds that keep it linear.
const (
	// minEncodedRun is the shortest base64 run decoded: 30 bytes of
	// text, shorter than any private key's BEGIN line.
	minEncodedRun = 40
	// maxDecodedBytes is the most decoded from one run; a longer run is
	// scanned on its first maxDecodedBytes, where a key's BEGIN line is.
	maxDecodedBytes = 64 << 10
	// maxDecodeDepth is how many layers of base64 are decoded: two, for a
	// kubeconfig inside a Kubernetes secret.
	maxDecodeDepth = 2
)

// base64Byte reports the bytes of standard and URL-safe base64, padding
// aside.
var base64Byte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = isWordByte(byte(c)) || c == '+' || c == '/' || c == '-'
	}
	return t
}()

// encodedRun is a base64 run: [start, end) in the text, possibly wrapped
// over several lines.
type encodedRun struct{ start, end int }

// encodedRuns returns the base64 runs of at least minEncodedRun bytes in
// text, in order. A run wraps onto the next line when its line ends with it, it
// has a length divisible by 4 and the next line holds base64 alone, as
// base64 -w and PEM bodies wrap. Each byte is looked at a bounded number
// of times: a probe minEncodedRun-1 bytes ahead skips prose.
func encodedRuns(text string) []encodedRun {
	var runs []encodedRun
	for i := 0; i+minEncodedRun <= len(text); {
		// Invariant: i is 0 or text[i-1] is not base64.
		j := i + minEncodedRun - 1
		if !base64Byte[text[j]] {
			i = j + 1
			continue
		}
		k := j
		for k > i && base64Byte[text[k-1]] {
			k--
		}
		if k > i {
			i = k
			continue
		}
		end := j + 1
		for end < len(text) && base64Byte[text[end]] {
			end++
		}
		end = padded(text, end)
		end = wrapped(text, i, end)
		runs = append(runs, encodedRun{start: i, end: end})
		i = end
	}
	return runs
}

// padded moves end past up to two = of padding.
func padded(text string, end int) int {
	for n := 0; n < 2 && end < len(text) && text[end] == '='; n++ {
		end++
	}
	return end
}

// wrapped extends the run of the line [lineStart, end) over the lines
// that continue it.
func wrapped(text string, lineStart, end int) int {
	for (end-lineStart)%4 == 0 && end-lineStart >= minEncodedRun && text[end-1] != '=' {
		next := end
		if next < len(text) && text[next] == '\r' {
			next++
		}
		if next >= len(text) || text[next] != '\n' {
			return end
		}
		next++
		for next < len(text) && (text[next] == ' ' || text[next] == '\t') {
			next++
		}
		s := next
		for next < len(text) && base64Byte[text[next]] {
			next++
		}
		next = padded(text, next)
		if next == s || (next < len(text) && text[next] != '\n' && text[next] != '\r') {
			return end
		}
		lineStart, end = s, next
	}
	return end
}

// decodeRun decodes a run's first maxDecodedBytes, or returns false when
// it is not base64 of text: a run mixing both alphabets, or bytes that
// are not UTF-8 (a DER certificate, an image).
func decodeRun(run string) (string, bool) {
	var b strings.Builder
	b.Grow(min(len(run), maxDecodedBytes/3*4))
	std, url := false, false
	for i := 0; i < len(run) && b.Len() < maxDecodedBytes/3*4; i++ {
		switch c := run[i]; c {
		case '\r', '\n', ' ', '\t', '=':
		case '+', '/':
			std = true
			b.WriteByte(c)
		case '-', '_':
			url = true
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	if std && url {
		return "", false
	}
	s := b.String()
	if len(s)%4 == 1 {
		s = s[:len(s)-1]
	}
	enc := base64.RawStdEncoding
	if url {
		enc = base64.RawURLEncoding
	}
	raw, err := enc.DecodeString(s)
	if err != nil {
		return "", false
	}
	for n := 0; n < utf8.UTFMax-1 && len(raw) > 0 && !utf8.Valid(raw); n++ {
		raw = raw[:len(raw)-1] // a rune cut at maxDecodedBytes
	}
	if !utf8.Valid(raw) {
		return "", false
	}
	return string(raw), true
}
