package objio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	storage "google.golang.org/api/storage/v1"
)

// Cloud Storage is reached through its JSON API with Google's generated
// client (google.golang.org/api/storage/v1, the one cloud.google.com/go/storage
// wraps for HTTP). The wrapper also links its gRPC and DirectPath stack, whose
// package initialisers alone kept ~15 MiB of `wf run` resident; objio needs
// streaming reads and atomic uploads only.

// uploadChunkSize is the part of an upload held in memory: an object up to
// this size goes in one request, a larger one as a resumable upload of
// chunks this size, each retried on a transient error.
const uploadChunkSize = 8 << 20

// Opening an object is retried on transient errors (429, 5xx, a broken
// connection) this many times in all, with a doubling pause.
const (
	openAttempts   = 4
	openFirstPause = 200 * time.Millisecond
)

// errAborted ends an upload that Writer.Abort discarded.
var errAborted = errors.New("upload aborted")

// ConnectGCS builds the Cloud Storage client now, so that missing
// credentials are reported at start-up rather than at the first gs://
// location. It is otherwise built on first use.
func (o *Opener) ConnectGCS(ctx context.Context) error {
	_, err := o.gcs(ctx)
	return err
}

// gcs returns the opener's Cloud Storage client, built on first use with
// Application Default Credentials (or none, for Config.GCSEndpoint). A
// failure is not kept: the next call tries again.
func (o *Opener) gcs(ctx context.Context) (*storage.Service, error) {
	o.storage.mu.Lock()
	defer o.storage.mu.Unlock()
	if o.storage.service != nil {
		return o.storage.service, nil
	}
	opts := []option.ClientOption{option.WithScopes(storage.DevstorageReadWriteScope)}
	if endpoint := o.gcsEndpoint(); endpoint != "" {
		opts = []option.ClientOption{option.WithoutAuthentication(), option.WithEndpoint(endpoint)}
	}
	// The client outlives this call's context: its credentials refresh later.
	svc, err := storage.NewService(context.WithoutCancel(ctx), opts...)
	if err != nil {
		return nil, fmt.Errorf("error creating the Cloud Storage client: %w", err)
	}
	o.storage.service = svc
	return svc, nil
}

// gcsEndpoint returns the emulator endpoint to use, if any: Config.GCSEndpoint,
// else the one STORAGE_EMULATOR_HOST names (see EmulatorEndpoint).
func (o *Opener) gcsEndpoint() string {
	if o.cfg.GCSEndpoint != "" {
		return o.cfg.GCSEndpoint
	}
	return EmulatorEndpoint()
}

// EmulatorEndpoint returns the JSON API endpoint of the Cloud Storage
// emulator STORAGE_EMULATOR_HOST names (host:port or a URL), as Google's
// own clients read it, or "" when it is not set.
func EmulatorEndpoint() string {
	host := os.Getenv("STORAGE_EMULATOR_HOST")
	if host == "" {
		return ""
	}
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	return strings.TrimSuffix(host, "/") + "/storage/v1/"
}

// openGCS streams the object at l, retrying the request (not the stream)
// on transient errors.
func (o *Opener) openGCS(ctx context.Context, l location) (io.ReadCloser, error) {
	svc, err := o.gcs(ctx)
	if err != nil {
		return nil, fmt.Errorf("error opening %s: %w", l.raw, err)
	}
	pause := openFirstPause
	for attempt := 1; ; attempt++ {
		resp, err := svc.Objects.Get(l.bucket, l.key).Context(ctx).Download()
		if err == nil {
			return resp.Body, nil
		}
		if attempt == openAttempts || !transient(err) {
			return nil, fmt.Errorf("error opening %s: %w", l.raw, gcsError(err))
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("error opening %s: %w", l.raw, errors.Join(ctx.Err(), err))
		case <-time.After(pause):
		}
		pause *= 2
	}
}

// createGCS starts an upload of l's object fed through a pipe by the
// writer. The object is created only when the writer closes the pipe and
// the upload's last request succeeds; Abort cancels the upload, so nothing
// appears.
func (o *Opener) createGCS(ctx context.Context, l location, contentType string) (*Writer, error) {
	svc, err := o.gcs(ctx)
	if err != nil {
		return nil, fmt.Errorf("error creating %s: %w", l.raw, err)
	}
	uctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := svc.Objects.Insert(l.bucket, &storage.Object{Name: l.key, ContentType: contentType}).
			Media(pr, googleapi.ContentType(contentType), googleapi.ChunkSize(uploadChunkSize)).
			WithRetry(&gax.Backoff{Initial: openFirstPause, Max: 10 * time.Second, Multiplier: 2}, nil).
			Context(uctx).
			Do()
		if err == nil {
			err = io.ErrClosedPipe // writes after the upload are refused
		}
		pr.CloseWithError(err) // a failed upload fails the writer's next Write
		done <- err
	}()
	finish := func() error {
		err := <-done
		if errors.Is(err, io.ErrClosedPipe) {
			return nil
		}
		return gcsError(err)
	}
	return &Writer{
		loc:   l.raw,
		write: pw.Write,
		commit: func() error {
			defer cancel()
			_ = pw.Close()
			return finish()
		},
		abort: func() {
			cancel()
			pw.CloseWithError(errAborted)
			_ = finish()
		},
	}, nil
}

// transient reports whether a request that failed with err may succeed
// when sent again.
func transient(err error) bool {
	var gerr *googleapi.Error
	if errors.As(err, &gerr) {
		return gerr.Code == http.StatusTooManyRequests || gerr.Code == http.StatusRequestTimeout || gerr.Code >= 500
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || isNetError(err)
}

// gcsError adds the package's sentinels to Cloud Storage errors.
func gcsError(err error) error {
	var gerr *googleapi.Error
	if errors.As(err, &gerr) {
		switch gerr.Code {
		case http.StatusNotFound:
			return fmt.Errorf("%w: %w", ErrNotFound, err)
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("%w: %w", ErrForbidden, err)
		}
	}
	return err
}

// isNetError reports whether err comes from the network (a refused or
// broken connection, a timeout).
func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}
