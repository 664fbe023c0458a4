package messages_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/pkg/messages"
)

func TestIDs(t *testing.T) {
	t.Parallel()
	// Expected values computed independently from the documented formulas.
	tests := []struct {
		name, got, want string
	}{
		{"DocID", messages.DocID("wiki", "pages/Go.md"), "d_7d012d80acc896b530a029bbe29a125b"},
		{"DeadLetterID", messages.DeadLetterID("d_abc", 7), "dl_b53e28ccd2910849cdcfaee06221b72e"},
		{"ChunkMsgID", messages.ChunkMsgID("d_abc", 7, 12), "d_abc:7:12"},
		{"ReplayMsgID", messages.ReplayMsgID("dl_xyz", 3), "replay:dl_xyz:3"},
		{"DeadLetterMsgID", messages.DeadLetterMsgID(9876543210), "dl:9876543210"},
		{"ChunkSubject", messages.ChunkSubject("wiki"), "ingest.chunks.wiki"},
		{"ReplaySubject", messages.ReplaySubject("wiki"), "ingest.replay.wiki"},
		{"DLQSubject", messages.DLQSubject(messages.DispositionQuarantine, "wiki"), "dlq.quarantine.wiki"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestIDsSeparateTheirInputs(t *testing.T) {
	t.Parallel()
	if messages.DocID("ab", "c") == messages.DocID("a", "bc") {
		t.Error(`DocID("ab","c") == DocID("a","bc")`)
	}
	if messages.DeadLetterID("d_1", 23) == messages.DeadLetterID("d_12", 3) {
		t.Error(`DeadLetterID("d_1",23) == DeadLetterID("d_12",3)`)
	}
	if messages.DeadLetterID("d_1", 0) == messages.DeadLetterID("d_1", 1) {
		t.Error("DeadLetterID ignores the chunk index")
	}
}

func TestParseChunkMsgID(t *testing.T) {
	t.Parallel()
	docID, index, version, err := messages.ParseChunkMsgID(messages.ChunkMsgID("d_abc", 7, 12))
	if err != nil || docID != "d_abc" || index != 7 || version != 12 {
		t.Errorf("ParseChunkMsgID = %q, %d, %d, %v; want d_abc, 7, 12, nil", docID, index, version, err)
	}
	docID, index, version, err = messages.ParseChunkMsgID("d_abc:7:12:r3")
	if err != nil || docID != "d_abc" || index != 7 || version != 12 {
		t.Errorf("ParseChunkMsgID(republished) = %q, %d, %d, %v; want d_abc, 7, 12, nil", docID, index, version, err)
	}
	for _, bad := range []string{
		"", "d_abc", "d_abc:7", "d_abc:7:12:1", "d_abc:7:12:r", "d_abc:7:12:rx", "d_abc:7:12:r1:r2", ":7:12", "d abc:7:12", "d_abc:-7:12", "d_abc:+7:12",
		"d_abc:7:0", "d_abc:x:12", "d_abc:2147483648:12", "d_abc:7:9223372036854775808",
		"replay:dl_x:1", "dl:5",
	} {
		if _, _, _, err := messages.ParseChunkMsgID(bad); !errors.Is(err, messages.ErrInvalid) {
			t.Errorf("ParseChunkMsgID(%q) error = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestValidateSourceID(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"wiki", "a", "S3_bucket-2", strings.Repeat("x", 64)} {
		if err := messages.ValidateSourceID(ok); err != nil {
			t.Errorf("ValidateSourceID(%q) = %v, want nil", ok, err)
		}
	}
	tests := []struct {
		in, reason string
		sentinel   error
	}{
		{"", "missing", messages.ErrMissingField},
		{strings.Repeat("x", 65), "limit is 64", nil},
		{"a.b", `invalid character '.' at byte 1`, nil},
		{"a*", `invalid character '*' at byte 1`, nil},
		{"a>", `invalid character '>'`, nil},
		{"a b", `invalid character ' '`, nil},
		{"wïki", `invalid character 'ï' at byte 1`, nil},
	}
	for _, tt := range tests {
		err := messages.ValidateSourceID(tt.in)
		assertDecodeError(t, err, tt.sentinel, "source_id", tt.reason)
		if err != nil && tt.sentinel == nil && !strings.Contains(err.Error(), "subject token") {
			t.Errorf("ValidateSourceID(%q) = %v; the error should say why", tt.in, err)
		}
	}
}

// SuggestSourceID turns a refused name into one ValidateSourceID takes.
func TestSuggestSourceID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"my docs":                 "my-docs",
		" my  docs. ":             "my-docs",
		"team/wiki.v2":            "team-wiki-v2",
		"wïki":                    "w-ki",
		"ok_name-1":               "ok_name-1",
		"...":                     "",
		strings.Repeat("ab ", 40): strings.TrimRight(strings.Repeat("ab-", 22)[:64], "-"),
	} {
		got := messages.SuggestSourceID(in)
		if got != want {
			t.Errorf("SuggestSourceID(%q) = %q, want %q", in, got, want)
		}
		if got != "" {
			if err := messages.ValidateSourceID(got); err != nil {
				t.Errorf("SuggestSourceID(%q) = %q, which ValidateSourceID refuses: %v", in, got, err)
			}
		}
	}
}

func TestSourceFromSubject(t *testing.T) {
	t.Parallel()
	for subject, want := range map[string]string{
		"ingest.chunks.wiki":   "wiki",
		"ingest.replay.s3-eu":  "s3-eu",
		"dlq.escalate.crm_exp": "crm_exp",
	} {
		got, err := messages.SourceFromSubject(subject)
		if err != nil || got != want {
			t.Errorf("SourceFromSubject(%q) = %q, %v; want %q", subject, got, err, want)
		}
	}
	for _, bad := range []string{
		"", "ingest.chunks.", "ingest.chunks.a.b", "ingest.other.wiki", "dlq.wiki", "dlq.drop.wiki", "dlq.retry.a.b",
	} {
		if _, err := messages.SourceFromSubject(bad); !errors.Is(err, messages.ErrInvalid) {
			t.Errorf("SourceFromSubject(%q) error = %v, want ErrInvalid", bad, err)
		}
	}
}
