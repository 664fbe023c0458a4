package extract

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/unicode/norm"
)

// maxControlRatio is the share of C0 control characters above which
// content is taken for binary, the corpus reader's threshold.
const maxControlRatio = 0.10

var (
	bomUTF8    = []byte{0xEF, 0xBB, 0xBF}
	bomUTF16LE = []byte{0xFF, 0xFE}
	bomUTF16BE = []byte{0xFE, 0xFF}
)

// errNotText is decodeText's verdict on binary content.
var errNotText = errors.New("not text")

// looksLikeText reports whether head, possibly cut in the middle of a
// character, would decode as text.
func looksLikeText(head []byte) bool {
	if len(head) == HeadSize {
		head = trimPartialRune(head)
	}
	_, err := decodeText(head)
	return err == nil
}

// utf8Body returns head as UTF-8 without a BOM, for sniffing only.
func utf8Body(head []byte) []byte {
	if bytes.HasPrefix(head, bomUTF16LE) || bytes.HasPrefix(head, bomUTF16BE) {
		s, err := decodeText(head[:len(head)&^1])
		if err != nil {
			return nil
		}
		return []byte(s)
	}
	return bytes.TrimPrefix(head, bomUTF8)
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < 0x80 {
			return b
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

// decodeText turns text bytes into normalised UTF-8 the way the corpus
// reader does: a UTF-16 BOM selects UTF-16, valid UTF-8 is kept (its BOM
// dropped), anything else is read as Windows-1252; a NUL, a byte
// Windows-1252 leaves undefined, or more than 10% control characters other
// than \t \n \r \f make it binary (errNotText). Line endings become "\n"
// and the text is put in Unicode NFC.
func decodeText(raw []byte) (string, error) {
	var s string
	switch {
	case bytes.HasPrefix(raw, bomUTF16LE), bytes.HasPrefix(raw, bomUTF16BE):
		order := unicode.LittleEndian
		if raw[0] == 0xFE {
			order = unicode.BigEndian
		}
		out, err := unicode.UTF16(order, unicode.IgnoreBOM).NewDecoder().Bytes(raw[2:])
		if err != nil {
			return "", fmt.Errorf("%w: utf-16: %v", errNotText, err)
		}
		s = string(out)
	case utf8.Valid(bytes.TrimPrefix(raw, bomUTF8)):
		s = string(bytes.TrimPrefix(raw, bomUTF8))
	default:
		if hasUndefined1252(raw) {
			return "", fmt.Errorf("%w: invalid UTF-8 with bytes undefined in Windows-1252", errNotText)
		}
		out, err := charmap.Windows1252.NewDecoder().Bytes(raw)
		if err != nil {
			return "", fmt.Errorf("%w: windows-1252: %v", errNotText, err)
		}
		s = string(out)
	}
	if err := checkControls(s); err != nil {
		return "", err
	}
	return normalize(s), nil
}

// checkControls rejects text with a NUL or too many control characters.
func checkControls(s string) error {
	n, controls := 0, 0
	for _, c := range s {
		n++
		switch {
		case c == 0:
			return fmt.Errorf("%w: NUL character", errNotText)
		case c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f':
			controls++
		}
	}
	if n > 0 && float64(controls) > maxControlRatio*float64(n) {
		return fmt.Errorf("%w: %d of %d characters are control characters", errNotText, controls, n)
	}
	return nil
}

// hasUndefined1252 reports whether raw holds one of the five bytes
// Windows-1252 assigns no character: then it is not Windows-1252 either.
func hasUndefined1252(raw []byte) bool {
	for _, b := range raw {
		if b == 0x81 || b == 0x8D || b == 0x8F || b == 0x90 || b == 0x9D {
			return true
		}
	}
	return false
}

var newlines = strings.NewReplacer("\r\n", "\n", "\r", "\n")

// normalize gives extracted text the form all text in the pipeline has:
// "\n" line endings and Unicode NFC.
func normalize(s string) string { return norm.NFC.String(newlines.Replace(s)) }
