package extract

import (
	"io"

	"github.com/sluicehq/sluice/pkg/classify"
)

// budget is a count of bytes that may still be inflated or produced; once
// it runs out, the extraction fails with extract_memory, whatever the
// file's headers claimed.
type budget struct {
	left, limit int64
	what        string
}

func newBudget(limit int64, what string) *budget {
	return &budget{left: limit, limit: limit, what: what}
}

// spend takes n bytes from the budget.
func (b *budget) spend(n int) error {
	b.left -= int64(n)
	if b.left < 0 {
		return failf(classify.ClassExtractMemory, "%s past the %d-byte limit", b.what, b.limit)
	}
	return nil
}

// reader returns r with every byte read taken from the budget.
func (b *budget) reader(r io.Reader) io.Reader { return &budgetReader{r: r, b: b} }

type budgetReader struct {
	r io.Reader
	b *budget
}

func (br *budgetReader) Read(p []byte) (int, error) {
	if br.b.left < 0 {
		return 0, br.b.spend(0)
	}
	// Read one byte past the budget so that exceeding it is noticed.
	if int64(len(p)) > br.b.left+1 {
		p = p[:br.b.left+1]
	}
	n, err := br.r.Read(p)
	if spendErr := br.b.spend(n); spendErr != nil {
		return n, spendErr
	}
	return n, err
}
