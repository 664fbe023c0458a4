package corpus

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/unicode/norm"
)

// Codec names recorded in Document.Codec and the "codec" metadata key.
const (
	CodecUTF8        = "utf-8"
	CodecWindows1252 = "windows-1252"
	CodecUTF16LE     = "utf-16le"
	CodecUTF16BE     = "utf-16be"
)

// maxControlRatio is the share of C0 control characters above which input
// is taken for binary. Real text has almost none besides tab, newline,
// carriage return and form feed; a stray escape or two must not condemn it.
const maxControlRatio = 0.10

var (
	bomUTF8    = []byte{0xEF, 0xBB, 0xBF}
	bomUTF16LE = []byte{0xFF, 0xFE}
	bomUTF16BE = []byte{0xFE, 0xFF}
)

// Decode turns raw document bytes into normalised text and names the codec
// it used.
//
// A UTF-16 BOM selects UTF-16; otherwise a UTF-8 BOM is dropped and valid
// UTF-8 is taken as such. Anything else gets one more chance as
// Windows-1252, the encoding legacy exports drift to, because retrying the
// same bytes as UTF-8 can never succeed. Input that looks binary — a NUL,
// a byte Windows-1252 leaves undefined, or more than 10% C0 control
// characters other than \t \n \r \f — is rejected with a *DecodeError
// (matching ErrUndecodable) instead of being turned into mojibake that
// would be embedded and searched.
//
// The text has "\r\n" and lone "\r" turned into "\n" and is in Unicode NFC,
// so that the same content always yields the same chunks and hashes.
func Decode(raw []byte) (text string, codec string, err error) {
	switch {
	case bytes.HasPrefix(raw, bomUTF16LE):
		return decodeUTF16(raw, unicode.LittleEndian, CodecUTF16LE)
	case bytes.HasPrefix(raw, bomUTF16BE):
		return decodeUTF16(raw, unicode.BigEndian, CodecUTF16BE)
	}
	body, base := raw, int64(0)
	if bytes.HasPrefix(raw, bomUTF8) {
		body, base = raw[len(bomUTF8):], int64(len(bomUTF8))
	}
	if err := checkBinary(len(body), func(i int) rune { return rune(body[i]) }, base, 1); err != nil {
		return "", "", err
	}
	if utf8.Valid(body) {
		return Normalize(string(body)), CodecUTF8, nil
	}
	for i, b := range body {
		if undefined1252(b) {
			return "", "", &DecodeError{
				Offset: base + int64(i),
				Reason: fmt.Sprintf("invalid UTF-8 and byte 0x%02X is undefined in Windows-1252", b),
			}
		}
	}
	out, err := charmap.Windows1252.NewDecoder().Bytes(body)
	if err != nil {
		// The decoder maps every defined byte, so this is unreachable with
		// the check above; report it rather than guess.
		return "", "", &DecodeError{Offset: base, Reason: "windows-1252: " + err.Error()}
	}
	return Normalize(string(out)), CodecWindows1252, nil
}

func decodeUTF16(raw []byte, order unicode.Endianness, codec string) (string, string, error) {
	body := raw[2:]
	unit := func(i int) rune {
		if order == unicode.LittleEndian {
			return rune(body[2*i]) | rune(body[2*i+1])<<8
		}
		return rune(body[2*i])<<8 | rune(body[2*i+1])
	}
	if err := checkBinary(len(body)/2, unit, 2, 2); err != nil {
		return "", "", err
	}
	// Unpaired surrogates and an odd trailing byte become U+FFFD: the rest of
	// the document is still worth having.
	out, err := unicode.UTF16(order, unicode.IgnoreBOM).NewDecoder().Bytes(body)
	if err != nil {
		return "", "", &DecodeError{Offset: 2, Reason: codec + ": " + err.Error()}
	}
	return Normalize(string(out)), codec, nil
}

// checkBinary looks at n code units, each width bytes wide and starting at
// byte base, for the marks of binary data.
func checkBinary(n int, at func(i int) rune, base int64, width int) error {
	controls, first := 0, -1
	for i := range n {
		c := at(i)
		if c >= 0x20 {
			continue
		}
		if c == 0 {
			return &DecodeError{Offset: base + int64(i*width), Reason: "NUL byte"}
		}
		if c == '\t' || c == '\n' || c == '\r' || c == '\f' {
			continue
		}
		if first < 0 {
			first = i
		}
		controls++
	}
	if n > 0 && float64(controls) > maxControlRatio*float64(n) {
		return &DecodeError{
			Offset: base + int64(first*width),
			Reason: fmt.Sprintf("%d of %d characters are control characters", controls, n),
		}
	}
	return nil
}

// undefined1252 reports the five bytes Windows-1252 assigns no character:
// their presence means the input is not Windows-1252 text either.
func undefined1252(b byte) bool {
	return b == 0x81 || b == 0x8D || b == 0x8F || b == 0x90 || b == 0x9D
}

var newlines = strings.NewReplacer("\r\n", "\n", "\r", "\n")

// Normalize applies the normalisation every decoded text gets: "\r\n" and
// lone "\r" become "\n", and the text is put in Unicode NFC. It is exported
// for text that enters the pipeline by another way than Decode.
func Normalize(s string) string {
	if strings.IndexByte(s, '\r') >= 0 {
		s = newlines.Replace(s)
	}
	return norm.NFC.String(s)
}
