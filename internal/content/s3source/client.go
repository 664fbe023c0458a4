package s3source

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// ClientConfig says where the store is and who reads it.
type ClientConfig struct {
	// Endpoint is the URL of an S3-compatible store, addressed path-style
	// (http://host:port/bucket/key). Defaults to AWS's endpoint for the
	// region, virtual-hosted.
	Endpoint string
	// Region signs the requests. Defaults to the standard chain's
	// (AWS_REGION, the shared config), else DefaultRegion.
	Region string
	// SecretFile, when set, names a file holding the access key id on
	// its first line and the secret access key on its second, used
	// instead of the standard credential chain (environment, shared
	// config and credentials files, instance roles).
	SecretFile string
}

// DefaultRegion signs requests when neither the settings nor the
// standard chain name a region.
const DefaultRegion = "us-east-1"

// NewClient returns an S3 client with the standard credential chain, or
// the secret file's keys. The client makes one attempt per call: Source
// retries what pkg/classify says is transient, with its own backoff.
func NewClient(ctx context.Context, cfg ClientConfig) (*s3.Client, error) {
	var opts []func(*config.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.SecretFile != "" {
		id, secret, err := readSecretFile(cfg.SecretFile)
		if err != nil {
			return nil, err
		}
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(id, secret, "")))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3: load the AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = DefaultRegion
	}
	return s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		o.Retryer = aws.NopRetryer{}
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
			o.UsePathStyle = true
		}
	}), nil
}

// readSecretFile reads an access key id and a secret access key, one a
// line.
func readSecretFile(path string) (id, secret string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("--s3-secret-file: %w", err)
	}
	lines := strings.Fields(string(b))
	if len(lines) != 2 {
		return "", "", fmt.Errorf("--s3-secret-file %s: write the access key id on the first line and the secret access key on the second", path)
	}
	return lines[0], lines[1], nil
}
