#!/bin/sh
# Regenerates the extraction test corpus from the sources beside it with
# the real tools that write each format. Run from this directory.
#
# Debian packages: pandoc (DOCX, ODT, PPTX, EPUB), libreoffice-calc-nogui
# and libreoffice-impress-nogui (XLSX, ODS, ODP), enscript and ghostscript
# (PDF), qpdf (encrypted PDF), gzip.
set -eu
cd "$(dirname "$0")"
export SOURCE_DATE_EPOCH=1767225600
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

pandoc sample.md -o sample.docx
pandoc sample.md -o sample.odt
pandoc sample.md -o sample.epub --metadata title="Sluice Sample"
pandoc slides.md -o slides.pptx

soffice --headless --convert-to xlsx --outdir . people.csv >/dev/null
soffice --headless --convert-to ods --outdir . people.csv >/dev/null
soffice --headless --convert-to odp --outdir . slides.pptx >/dev/null

# Three pages, each saying its number; enscript breaks pages at form feeds.
printf 'This is page 1 of the sample report. Sluice extracts text page by page.\f' >"$tmp/pages.txt"
printf 'This is page 2 of the sample report. Tables and columns come out as text.\f' >>"$tmp/pages.txt"
printf 'This is page 3 of the sample report. The end.\n' >>"$tmp/pages.txt"
enscript -q -B -t "Sample Report" -p "$tmp/pages.ps" "$tmp/pages.txt"
ps2pdf "$tmp/pages.ps" pages.pdf
# Two pages with no text, as a scan without OCR looks to a text extractor.
printf '\f\n' | enscript -q -B -p "$tmp/blank.ps"
ps2pdf "$tmp/blank.ps" scan.pdf
qpdf --encrypt secret secret 256 -- pages.pdf encrypted.pdf
head -c 2000 pages.pdf >truncated.pdf

gzip -n -c sample.md >sample.md.gz
