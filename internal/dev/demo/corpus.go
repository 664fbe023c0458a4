package demo

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/internal/content/extract"
	"github.com/sluicehq/sluice/internal/content/extract/scantest"
	"github.com/sluicehq/sluice/pkg/classify"
)

// The sample corpus is generated, not shipped: original sentences about
// water engineering assembled from these parts by a seeded generator, so
// every run ingests the same documents.
var (
	subjects = []string{"The sluice gate", "A tidal lock", "The millrace", "An irrigation canal", "The spillway",
		"A fish ladder", "The weir", "A drainage ditch", "The headrace", "A flood barrier", "The reservoir", "A culvert"}
	verbs   = []string{"regulates", "diverts", "slows", "measures", "holds back", "releases", "channels", "filters"}
	objects = []string{"the spring meltwater", "silt-laden floods", "the evening tide", "water for the terraced fields",
		"the overflow from the upper basin", "runoff from the clay hills", "the mill's working head of water", "seasonal storm surges"}
	clauses = []string{"when the gauge reads above the red mark", "so that the downstream villages stay dry",
		"while the keeper logs every adjustment", "before the orchards need their first watering",
		"unless the inspection finds cracked timbers", "because the old stone channel cannot take more",
		"after the engineers replaced the rusted paddles", "as the river authority requires each season"}
	topics = []string{"hydrology", "maintenance", "history", "operations", "safety", "ecology"}
)

func sentence(r *rand.Rand) string {
	return fmt.Sprintf("%s %s %s %s.", subjects[r.IntN(len(subjects))], verbs[r.IntN(len(verbs))],
		objects[r.IntN(len(objects))], clauses[r.IntN(len(clauses))])
}

func paragraph(r *rand.Rand) string {
	n := 3 + r.IntN(6)
	s := make([]string, n)
	for i := range s {
		s[i] = sentence(r)
	}
	return strings.Join(s, " ")
}

// Poison names the sample's deliberately odd documents, the bad ones,
// the document files and the scans, and what each is expected to become.
var Poison = map[string]string{
	"poison/legacy-notes.txt":   "stored, decoded as Windows-1252",
	"poison/sensor-dump.txt":    "parked as unsupported_format (binary, no known format)",
	"poison/oversize-table.md":  "parked as context_length_exceeded",
	"poison/empty.txt":          "recorded as empty",
	"poison/deploy-secrets.txt": "escalated as policy_violation, never sent to the embedder",
	ReportPDF:                   "stored, its three pages read by pdftotext",
	BoundPDF:                    "stored, its twelve pages (report.pdf four times, joined by qpdf) read by pdftotext",
	MinutesDOCX:                 "stored, its paragraphs and table read from the DOCX's XML",
	LockedPDF:                   "parked as " + classify.ClassEncrypted + " (report.pdf behind a password)",
	BombDOCX: fmt.Sprintf("parked as %s (a zip bomb: its document.xml inflates to %d MiB, past the %d MiB limit)",
		classify.ClassExtractMemory, bombSize>>20, extract.DefaultMaxUncompressed>>20),
	ScanSource + "/" + CleanScan: "stored, its text recognised by Tesseract OCR",
	ScanSource + "/" + LowScan:   "parked as " + classify.ClassOCRLowConfidence + ", what OCR recognised kept for keying",
}

// The scans are pages of extract's testdata/pages.pdf rendered at 300 dpi,
// as a scanner images them, which the producer reads with Tesseract. They
// are a source of their own, read from a folder of their own.
const (
	// ScanSource is the scans' source.
	ScanSource = "scans"
	// CleanScan holds the text of the PDF's three pages on one page: OCR
	// reads it well above the default ocr_min_confidence of 0.80.
	CleanScan = "report-clean.png"
	// LowScan is page 2 as a 75 dpi scan, the producer's tests' low one:
	// OCR reads it far below the bar.
	LowScan = "report-lowres.png"
)

// OversizeMarker makes embed-sim answer "maximum context length" for the
// oversize document, as a real model does when its tokenizer counts more
// tokens than the chunker's estimate.
const OversizeMarker = "OVERSIZE-TABLE"

// WriteCorpus writes n generated documents and the poison documents into
// dir and returns how many files it wrote. The poison folder holds the
// document files too, copied from extract's testdata and a zip bomb, so
// that removing it leaves text only. The scans, which need pdftoppm, and
// BoundPDF, which needs qpdf, are the demo's own (writeScans,
// writeBoundPDF).
func WriteCorpus(dir string, n int, seed uint64) (int, error) {
	files := generate(n, seed)
	files["poison/legacy-notes.txt"] = []byte("Caf\xe9 by the weir: the keeper\x92s \x93na\xefve\x94 ledger of every opening, written on the old Windows machine.")
	files["poison/sensor-dump.txt"] = []byte("gauge\x00\x01\x02\x81\x8d\x00raw\x00frame\x00\x90\x9d")
	files["poison/oversize-table.md"] = []byte("# " + OversizeMarker + "\n\n" + strings.Repeat("| 0x7f3a | 0x91bc | 0x00ff | 0xdead |\n", 20))
	files["poison/empty.txt"] = nil
	files["poison/deploy-secrets.txt"] = []byte("Gate controller deployment notes.\n\n-----BEGIN OPENSSH PRIVATE KEY-----\n" +
		"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n")
	if err := copyTestdata(files); err != nil {
		return 0, err
	}
	if err := writeFiles(dir, files); err != nil {
		return 0, err
	}
	if err := writeBomb(dir); err != nil {
		return 0, fmt.Errorf("write %s: %w", BombDOCX, err)
	}
	return len(files) + 1, nil
}

// generate returns n generated documents by their paths: notes, bulletins
// and logs on each topic in turn.
func generate(n int, seed uint64) map[string][]byte {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	files := map[string][]byte{}
	for i := range n {
		topic := topics[i%len(topics)]
		paras := 1 + r.IntN(5)
		var body strings.Builder
		switch i % 3 {
		case 0:
			fmt.Fprintf(&body, "# Note %d on %s\n\n", i, topic)
			for range paras {
				body.WriteString(paragraph(r) + "\n\n")
			}
			files[fmt.Sprintf("%s/note-%03d.md", topic, i)] = []byte(body.String())
		case 1:
			fmt.Fprintf(&body, "<html><head><title>Bulletin %d: %s</title><style>p{}</style></head><body>", i, topic)
			for range paras {
				body.WriteString("<p>" + paragraph(r) + "</p>")
			}
			body.WriteString("<script>track()</script></body></html>")
			files[fmt.Sprintf("%s/bulletin-%03d.html", topic, i)] = []byte(body.String())
		default:
			for range paras {
				body.WriteString(paragraph(r) + "\n\n")
			}
			files[fmt.Sprintf("%s/log-%03d.txt", topic, i)] = []byte(body.String())
		}
	}
	return files
}

// writeScans renders the scans into dir with pdftoppm, as PNG files, and
// returns how many files it wrote.
func writeScans(dir string) (int, error) {
	pages := make([]*image.Gray, 3)
	for i := range pages {
		page, err := scantest.Render(scantest.PagesPDF(), i+1)
		if err != nil {
			return 0, fmt.Errorf("render the demo's scans (make extract-tools installs pdftoppm): %w", err)
		}
		pages[i] = page
	}
	files := map[string][]byte{}
	for name, img := range map[string]image.Image{CleanScan: scantest.StackPages(pages...), LowScan: scantest.LowRes(pages[1], 4)} {
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			return 0, fmt.Errorf("encode %s: %w", name, err)
		}
		files[name] = b.Bytes()
	}
	if err := writeFiles(dir, files); err != nil {
		return 0, err
	}
	return len(files), nil
}

// writeFiles writes each file of files, by its path under dir.
func writeFiles(dir string, files map[string][]byte) error {
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return err
		}
	}
	return nil
}
