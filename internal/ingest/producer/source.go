package producer

import (
	"context"
	"fmt"
	"io"

	"github.com/sluicehq/sluice/internal/platform/service"
)

// runSource is the producer command over a source that is not inputs:
// a declared table (--table-source) or an S3 prefix (--s3).
func runSource(ctx context.Context, f *ServiceConfig, inputs []string, lookup func(string) (string, bool), stdout, stderr io.Writer) error {
	if f.S3.URL != "" {
		if len(inputs) > 0 {
			return service.UsageError(fmt.Errorf("--s3 %s reads the bucket: drop the inputs %v", f.S3.URL, inputs))
		}
		return runS3(ctx, f, lookup, stdout, stderr)
	}
	if len(inputs) > 0 {
		return service.UsageError(fmt.Errorf("--table-source %s reads the table: drop the inputs %v", f.TableSource, inputs))
	}
	cfg, _, err := f.withPolicy()
	if err != nil {
		return err
	}
	return runTable(ctx, f, cfg, lookup, stdout, stderr)
}
