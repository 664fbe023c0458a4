package corpus

import (
	"errors"
	"testing"

	"golang.org/x/text/encoding/unicode"
)

func utf16(t *testing.T, order unicode.Endianness, s string) []byte {
	t.Helper()
	b, err := unicode.UTF16(order, unicode.UseBOM).NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecode(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		raw       []byte
		wantText  string
		wantCodec string
	}{
		{"empty", nil, "", CodecUTF8},
		{"ascii", []byte("plain text\n"), "plain text\n", CodecUTF8},
		{"utf-8", []byte("caf\u00e9 \u65e5\u672c \U0001F600"), "caf\u00e9 \u65e5\u672c \U0001F600", CodecUTF8},
		{"utf-8 BOM stripped", []byte("\xEF\xBB\xBFhello"), "hello", CodecUTF8},
		{"windows-1252", []byte("caf\xe9 na\xefve \x93quoted\x94"), "café naïve “quoted”", CodecWindows1252},
		{"windows-1252 euro and dashes", []byte("\x80 5 \x96 \x85"), "€ 5 – …", CodecWindows1252},
		{"utf-8 BOM then windows-1252", []byte("\xEF\xBB\xBFna\xefve"), "naïve", CodecWindows1252},
		{"CRLF", []byte("a\r\nb\r\n"), "a\nb\n", CodecUTF8},
		{"lone CR", []byte("a\rb"), "a\nb", CodecUTF8},
		{"NFC", []byte("e\u0301t\u00e9"), "\u00e9t\u00e9", CodecUTF8},
		{"tabs and form feeds are text", []byte("a\tb\fc\n"), "a\tb\fc\n", CodecUTF8},
		{"a stray escape is text", []byte("a line with one \x1b escape among many ordinary characters"), "a line with one \x1b escape among many ordinary characters", CodecUTF8},
		{"utf-16le", utf16(t, unicode.LittleEndian, "h\u00e9llo\r\n\U0001F600"), "h\u00e9llo\n\U0001F600", CodecUTF16LE},
		{"utf-16be", utf16(t, unicode.BigEndian, "h\u00e9llo"), "h\u00e9llo", CodecUTF16BE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			text, codec, err := Decode(tt.raw)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if text != tt.wantText || codec != tt.wantCodec {
				t.Errorf("Decode = %q, %q; want %q, %q", text, codec, tt.wantText, tt.wantCodec)
			}
		})
	}
}

func TestDecodeUndecodable(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name       string
		raw        []byte
		wantOffset int64
	}{
		{"NUL in ASCII", []byte("abc\x00def"), 3},
		{"NUL after BOM", []byte("\xEF\xBB\xBFab\x00"), 5},
		{"NUL in otherwise windows-1252", []byte("caf\xe9\x00"), 4},
		{"0x81", []byte("abc \x81 def"), 4},
		{"0x8D", []byte("\x8D"), 0},
		{"0x8F", []byte("ab\x8F"), 2},
		{"0x90", []byte("ab\x90"), 2},
		{"0x9D", []byte("ab\x9D"), 2},
		{"mostly control characters", []byte("ab\x01\x02\x03\x04cdefgh"), 2},
		{"NUL in utf-16le", append([]byte{0xFF, 0xFE}, 'a', 0, 0, 0), 4},
		{"controls in utf-16be", append([]byte{0xFE, 0xFF}, 0, 1, 0, 2, 0, 'a'), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			text, codec, err := Decode(tt.raw)
			if !errors.Is(err, ErrUndecodable) {
				t.Fatalf("Decode = %q, %q, %v; want ErrUndecodable", text, codec, err)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError", err)
			}
			if de.Offset != tt.wantOffset {
				t.Errorf("Offset = %d, want %d (%v)", de.Offset, tt.wantOffset, err)
			}
			if text != "" || codec != "" {
				t.Errorf("undecodable input returned text %q codec %q", text, codec)
			}
		})
	}
}
