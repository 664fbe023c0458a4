// Package scantest makes a corpus of scans at test time from the text
// PDF testdata/pages.pdf of package extract: its pages rendered at 300
// dpi with pdftoppm, as a scanner would image them, then degraded in Go
// (noise, blur, low resolution) with a seeded generator so that every
// run sees the same pixels; image-only PDFs of them, and TIFF bombs.
// Tests of extraction and of the producer, the demo and the benchmark
// use it; no product code does.
package scantest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Sentences of testdata/pages.pdf (enscript's Courier, made by
// generate.sh), one per page.
const (
	Sentence1 = "Sluice extracts text page by page."
	Sentence2 = "Tables and columns come out as text."
	Sentence3 = "The end."
)

// DPI is the resolution the corpus is rendered at.
const DPI = 300

// PagesPDF is the path of extract's testdata/pages.pdf, from any test's
// directory.
func PagesPDF() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "pages.pdf")
}

// RenderPage renders one page of a PDF in grey at 300 dpi, failing t if
// it cannot.
func RenderPage(t testing.TB, pdf string, page int) *image.Gray {
	t.Helper()
	img, err := Render(pdf, page)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// Render renders one page of a PDF in grey at 300 dpi with pdftoppm, for
// the tools that make scans outside a test (the demo, the benchmark).
func Render(pdf string, page int) (*image.Gray, error) {
	n := fmt.Sprint(page)
	out, err := exec.Command("pdftoppm", "-r", fmt.Sprint(DPI), "-f", n, "-l", n, "-gray", "-png", pdf).Output()
	if err != nil {
		return nil, fmt.Errorf("pdftoppm page %d of %s: %w", page, pdf, err)
	}
	img, err := png.Decode(bytes.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("pdftoppm page %d of %s: %w", page, pdf, err)
	}
	g := image.NewGray(img.Bounds())
	draw.Draw(g, g.Bounds(), img, image.Point{}, draw.Src)
	return g, nil
}

// textBand returns the rows of img that hold ink, with a margin.
func textBand(img *image.Gray) image.Rectangle {
	b := img.Bounds()
	top, bottom := -1, -1
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if img.GrayAt(x, y).Y < 128 {
				if top < 0 {
					top = y
				}
				bottom = y
				break
			}
		}
	}
	return image.Rect(b.Min.X, max(top-20, b.Min.Y), b.Max.X, min(bottom+20, b.Max.Y))
}

// StackPages returns one page-sized image holding the text of each of
// pages, one under the other.
func StackPages(pages ...*image.Gray) *image.Gray {
	out := blankPage(pages[0].Bounds())
	y := 150
	for _, p := range pages {
		band := textBand(p)
		dst := image.Rect(0, y, band.Dx(), y+band.Dy())
		draw.Draw(out, dst, p, band.Min, draw.Src)
		y += band.Dy() + 60
	}
	return out
}

func blankPage(r image.Rectangle) *image.Gray {
	g := image.NewGray(r)
	draw.Draw(g, r, image.NewUniform(color.White), image.Point{}, draw.Src)
	return g
}

// Noisy flips a fraction of the pixels of img's text band to random
// grey, as a dirty scanner glass or a fax line does.
func Noisy(img *image.Gray, fraction float64, seed uint64) *image.Gray {
	out := image.NewGray(img.Bounds())
	copy(out.Pix, img.Pix)
	rng := rand.New(rand.NewPCG(seed, seed))
	band := textBand(img)
	for y := band.Min.Y; y < band.Max.Y; y++ {
		for x := band.Min.X; x < band.Max.X; x++ {
			if rng.Float64() < fraction {
				out.SetGray(x, y, color.Gray{Y: uint8(rng.IntN(256))})
			}
		}
	}
	return out
}

// Blurred averages each pixel with its neighbours within radius, as an
// out-of-focus camera does.
func Blurred(img *image.Gray, radius int) *image.Gray {
	b := img.Bounds()
	tmp := image.NewGray(b)
	out := image.NewGray(b)
	box := func(src, dst *image.Gray, dx, dy int) {
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				sum, n := 0, 0
				for k := -radius; k <= radius; k++ {
					p := image.Pt(x+k*dx, y+k*dy)
					if p.In(b) {
						sum += int(src.GrayAt(p.X, p.Y).Y)
						n++
					}
				}
				dst.SetGray(x, y, color.Gray{Y: uint8(sum / n)})
			}
		}
	}
	box(img, tmp, 1, 0)
	box(tmp, out, 0, 1)
	return out
}

// LowRes keeps one pixel in factor each way, as a scan at 300/factor
// dpi, then blows it back up to the page's size.
func LowRes(img *image.Gray, factor int) *image.Gray {
	b := img.Bounds()
	out := image.NewGray(b)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			out.SetGray(x, y, img.GrayAt(x/factor*factor, y/factor*factor))
		}
	}
	return out
}

// WriteFile writes data to a file named name in dir and returns its path.
func WriteFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// PNG encodes img as a PNG file.
func PNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ImagePDF returns a PDF whose pages are the images, each a JPEG
// (DCTDecode) filling a US Letter page: a scan with no text layer.
func ImagePDF(t testing.TB, pages ...image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	var offsets []int
	obj := func(body string, stream []byte) {
		offsets = append(offsets, buf.Len())
		fmt.Fprintf(&buf, "%d 0 obj\n%s", len(offsets), body)
		if stream != nil {
			buf.WriteString("\nstream\n")
			buf.Write(stream)
			buf.WriteString("\nendstream")
		}
		buf.WriteString("\nendobj\n")
	}
	buf.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	kids := ""
	for i := range pages {
		kids += fmt.Sprintf("%d 0 R ", 3+3*i)
	}
	obj("<< /Type /Catalog /Pages 2 0 R >>", nil)
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", kids, len(pages)), nil)
	for i, img := range pages {
		var j bytes.Buffer
		if err := jpeg.Encode(&j, img, &jpeg.Options{Quality: 90}); err != nil {
			t.Fatal(err)
		}
		page, content, xobj := 3+3*i, 4+3*i, 5+3*i
		_ = page
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im0 %d 0 R >> >> /Contents %d 0 R >>", xobj, content), nil)
		draw := []byte("q 612 0 0 792 0 0 cm /Im0 Do Q")
		obj(fmt.Sprintf("<< /Length %d >>", len(draw)), draw)
		b := img.Bounds()
		obj(fmt.Sprintf("<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /DCTDecode /Length %d >>", b.Dx(), b.Dy(), j.Len()), j.Bytes())
	}
	xref := buf.Len()
	fmt.Fprintf(&buf, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, off := range offsets {
		fmt.Fprintf(&buf, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&buf, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return buf.Bytes()
}

// MergePDFs joins the pages of the PDFs with qpdf.
func MergePDFs(t testing.TB, dir, name string, pdfs ...string) string {
	t.Helper()
	out, err := Merge(dir, name, pdfs...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Merge joins the pages of the PDFs with qpdf into dir/name and returns
// its path, for the tools that make PDFs outside a test (the demo).
func Merge(dir, name string, pdfs ...string) (string, error) {
	out := filepath.Join(dir, name)
	args := append([]string{"--empty", "--pages"}, pdfs...)
	if msg, err := exec.Command("qpdf", append(args, "--", out)...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("join %s with qpdf (make extract-tools installs it): %v: %s", name, err, bytes.TrimSpace(msg))
	}
	return out, nil
}

// TIFFBomb returns a TIFF whose pages declare width × height pixels, in
// a few hundred bytes: an uncompressed grey strip claimed for each page,
// with one row of data behind it.
func TIFFBomb(pages int, width, height uint32) []byte {
	var buf bytes.Buffer
	le := binary.LittleEndian
	buf.WriteString("II*\x00")
	_ = binary.Write(&buf, le, uint32(8))
	entry := func(tag, typ uint16, count, value uint32) {
		_ = binary.Write(&buf, le, tag)
		_ = binary.Write(&buf, le, typ)
		_ = binary.Write(&buf, le, count)
		_ = binary.Write(&buf, le, value)
	}
	const entries = 8
	dirSize := uint32(2 + entries*12 + 4)
	for p := range pages {
		base := uint32(8) + uint32(p)*dirSize
		data := uint32(8) + uint32(pages)*dirSize
		_ = binary.Write(&buf, le, uint16(entries))
		entry(256, 4, 1, width)  // ImageWidth
		entry(257, 4, 1, height) // ImageLength
		entry(258, 3, 1, 8)      // BitsPerSample
		entry(259, 3, 1, 1)      // Compression: none
		entry(262, 3, 1, 1)      // Photometric: black is zero
		entry(273, 4, 1, data)   // StripOffsets
		entry(278, 4, 1, height) // RowsPerStrip
		entry(279, 4, 1, width)  // StripByteCounts: one row
		next := base + dirSize
		if p == pages-1 {
			next = 0
		}
		_ = binary.Write(&buf, le, next)
	}
	buf.Write(bytes.Repeat([]byte{0xff}, 256))
	return buf.Bytes()
}
