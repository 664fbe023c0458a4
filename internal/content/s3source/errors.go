package s3source

import (
	"errors"
	"fmt"
	"net/http"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/sluicehq/sluice/pkg/classify"
)

// ErrAccessDenied is a request the store refused to the credentials:
// the walk fails, since every other request would be refused too.
var ErrAccessDenied = errors.New("access denied")

// ErrNoSuchBucket is a bucket the store does not have.
var ErrNoSuchBucket = errors.New("no such bucket")

// errNoSuchKey is an object gone between its listing and its fetch.
var errNoSuchKey = errors.New("no such key")

// StoreError is a failure of one request to the store, classified: its
// Decision says whether another attempt may succeed.
type StoreError struct {
	// Op is the S3 operation: ListObjectsV2 or GetObject.
	Op string
	// Location is what the request was about.
	Location string
	// Decision is pkg/classify's verdict.
	Decision classify.Decision
	// Err is the client's error.
	Err error
}

// Error names the operation, what it was about, and the cause.
func (e *StoreError) Error() string {
	return fmt.Sprintf("s3 %s %s: %v", e.Op, e.Location, e.Err)
}

// Unwrap returns the cause.
func (e *StoreError) Unwrap() error { return e.Err }

// classified turns a client error into what the walk branches on: a
// missing bucket or a denial as ErrNoSuchBucket or ErrAccessDenied with
// what to fix, a missing key as errNoSuchKey, and anything else as a
// StoreError whose Decision comes from the reply's status (classify's
// FromStatus, SlowDown counting as a 503) or, without a reply, from the
// cause (timeouts and broken connections are retried).
func classified(op, location string, err error) error {
	code, status := "", 0
	if apiErr, ok := errors.AsType[smithy.APIError](err); ok {
		code = apiErr.ErrorCode()
	}
	if resp, ok := errors.AsType[*awshttp.ResponseError](err); ok {
		status = resp.HTTPStatusCode()
	}
	switch {
	case code == "NoSuchBucket":
		return fmt.Errorf("%w: %s: create the bucket, or name an existing one in --s3", ErrNoSuchBucket, location)
	case code == "AccessDenied" || code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || status == http.StatusForbidden:
		return fmt.Errorf("%w: s3 %s %s (%s): give the credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, the shared config, or --s3-secret-file) the right to list and get the prefix's objects: %w",
			ErrAccessDenied, op, location, code, err)
	case code == "NoSuchKey" || (op == opGet && status == http.StatusNotFound):
		return fmt.Errorf("%w: %s", errNoSuchKey, location)
	}
	d := classify.Classify(err)
	switch {
	case code == "SlowDown":
		d = classify.FromStatus(http.StatusServiceUnavailable, code, 0)
	case status != 0:
		d = classify.FromStatus(status, code, 0)
	}
	return &StoreError{Op: op, Location: location, Decision: d, Err: err}
}

// retryable reports whether another attempt of a failed request may
// succeed.
func retryable(err error) bool {
	if e, ok := errors.AsType[*StoreError](err); ok {
		return e.Decision.Disposition == classify.Retry
	}
	return false
}
