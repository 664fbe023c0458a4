package messages_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/pkg/messages"
)

func parkedFile() messages.ParkedFile {
	return messages.ParkedFile{Schema: messages.ParkedFileSchema, SourceNativeID: "manuals/guide.pdf", Path: "/srv/docs/manuals/guide.pdf",
		Bytes: 1234, Format: "pdf", MIME: "application/pdf", SHA256: strings.Repeat("ab", 32), Status: "unsupported",
		Kept: messages.KeptFile}
}

func TestParkedFileRoundTrip(t *testing.T) {
	t.Parallel()
	p := parkedFile()
	raw, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := messages.DecodeParkedFile(raw)
	if err != nil || got != p {
		t.Fatalf("DecodeParkedFile = %+v, %v; want %+v", got, err, p)
	}
	// A chunk job is not a parked file, nor the other way round.
	if _, err := messages.DecodeChunkJob(raw); err == nil {
		t.Error("a parked file decodes as a chunk job")
	}
	s := string(raw)
	for name, bad := range map[string]string{
		"unknown key":  strings.Replace(s, `"schema":1,`, `"schema":1,"extra":1,`, 1),
		"no status":    strings.Replace(s, `,"status":"unsupported"`, ``, 1),
		"bad sha256":   strings.Replace(s, strings.Repeat("ab", 32), "xyz", 1),
		"newer schema": strings.Replace(s, `"schema":1`, `"schema":2`, 1),
		"kept unknown": strings.Replace(s, `"kept":"kept"`, `"kept":"maybe"`, 1),
		"kept no hash": strings.Replace(s, `"sha256":"`+strings.Repeat("ab", 32)+`",`, ``, 1),
	} {
		if _, err := messages.DecodeParkedFile([]byte(bad)); err == nil {
			t.Errorf("%s: %s decodes", name, bad)
		}
	}
}

func FuzzDecodeParkedFile(f *testing.F) {
	p := parkedFile()
	raw, err := p.Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte(`{"schema":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := messages.DecodeParkedFile(data)
		if err != nil {
			checkRejection(t, err)
			return
		}
		again, err := p.Encode()
		if err != nil {
			t.Fatalf("a decoded parked file does not encode: %v", err)
		}
		if q, err := messages.DecodeParkedFile(again); err != nil || q != p {
			t.Fatalf("round trip changed %+v to %+v (%v)", p, q, err)
		}
	})
}
