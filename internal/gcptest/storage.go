// Package gcptest runs Google Cloud's services in-process for tests: Cloud
// Storage (fake-gcs-server, with the bucket fields it drops kept beside
// it), Pub/Sub (the client library's pstest), Google's OIDC token signing
// keys (a local RSA key served as Google's JWKS), and a relay that delivers
// a pull subscription's messages to a push endpoint as Pub/Sub push does.
// Tests talk to them through the real clients.
package gcptest

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/stretchr/testify/require"
)

// bucketMeta holds the bucket fields fake-gcs-server does not keep.
type bucketMeta struct {
	Labels           map[string]string `json:"labels,omitempty"`
	IamConfiguration json.RawMessage   `json:"iamConfiguration,omitempty"`
	Lifecycle        json.RawMessage   `json:"lifecycle,omitempty"`
	Location         string            `json:"location,omitempty"`
}

// Storage is an in-process Cloud Storage: fake-gcs-server for objects and
// notification configurations, behind a layer that keeps what
// fake-gcs-server drops of a bucket (labels, iamConfiguration, lifecycle,
// location) and merges it into the bucket resources it answers, as the
// JSON API does.
type Storage struct {
	// Fake is the fake-gcs-server (objects can be read and written
	// through it directly).
	Fake *fakestorage.Server
	// URL is the server's root; Endpoint is the JSON API endpoint the
	// client takes (option.WithEndpoint) and STORAGE_EMULATOR_HOST is URL.
	URL, Endpoint string

	mu   sync.Mutex
	meta map[string]*bucketMeta
}

// NewStorage starts an in-process Cloud Storage for the test.
func NewStorage(t *testing.T) *Storage {
	t.Helper()
	fake, err := fakestorage.NewServerWithOptions(fakestorage.Options{NoListener: true})
	require.NoError(t, err)
	t.Cleanup(fake.Stop)
	s := &Storage{Fake: fake, meta: map[string]*bucketMeta{}}
	hs := httptest.NewServer(s.handler(fake.HTTPHandler()))
	t.Cleanup(hs.Close)
	s.URL, s.Endpoint = hs.URL, hs.URL+"/storage/v1/"
	return s
}

// NewFakeGCS starts a plain fake-gcs-server on loopback HTTP for the test,
// holding the buckets named: the objects side of Cloud Storage only
// (NewStorage keeps the bucket fields too). Clients take URL() +
// "/storage/v1/" as their endpoint.
func NewFakeGCS(t testing.TB, buckets ...string) *fakestorage.Server {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1"})
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	for _, b := range buckets {
		srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: b})
	}
	return srv
}

// ObjectNames lists the names of the objects of bucket, in name order; nil
// when it has none or does not exist.
func (s *Storage) ObjectNames(bucket string) []string {
	res, err := s.Fake.ListObjectsWithOptionsPaginated(bucket, fakestorage.ListOptions{})
	if err != nil {
		return nil
	}
	var names []string
	for _, o := range res.Objects {
		names = append(names, o.Name)
	}
	return names
}

// BucketLabels returns a bucket's labels as the server keeps them.
func (s *Storage) BucketLabels(bucket string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.meta[bucket]; m != nil {
		return maps.Clone(m.Labels)
	}
	return nil
}

// SetBucketMeta replaces what the server keeps of a bucket's labels, IAM
// configuration and lifecycle (for drift: nil removes), as a console user
// would.
func (s *Storage) SetBucketMeta(bucket string, labels map[string]string, iam, lifecycle json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.meta[bucket]
	if m == nil {
		m = &bucketMeta{}
		s.meta[bucket] = m
	}
	m.Labels, m.IamConfiguration, m.Lifecycle = labels, iam, lifecycle
}

// BucketMeta returns the IAM configuration and lifecycle kept for a bucket.
func (s *Storage) BucketMeta(bucket string) (iam, lifecycle json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.meta[bucket]; m != nil {
		return m.IamConfiguration, m.Lifecycle
	}
	return nil, nil
}

// handler serves bucket inserts, reads, patches and deletes through next,
// keeping and merging the fields next drops.
func (s *Storage) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := strings.TrimPrefix(r.URL.Path, "/storage/v1")
		bucketPath := strings.HasPrefix(p, "/b/") && !strings.Contains(strings.TrimPrefix(p, "/b/"), "/")
		switch {
		case r.Method == http.MethodPost && p == "/b":
			body, _ := io.ReadAll(r.Body)
			var m bucketMeta
			var named struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(body, &m)
			_ = json.Unmarshal(body, &named)
			rec := s.serve(next, r, body)
			if rec.Code == http.StatusOK {
				s.mu.Lock()
				s.meta[named.Name] = &m
				s.mu.Unlock()
			}
			s.answer(w, rec, named.Name)
		case bucketPath && r.Method == http.MethodPatch:
			name, _ := url.PathUnescape(strings.TrimPrefix(p, "/b/"))
			body, _ := io.ReadAll(r.Body)
			var patch map[string]json.RawMessage
			_ = json.Unmarshal(body, &patch)
			rec := s.serve(next, r, body)
			if rec.Code == http.StatusOK {
				s.mu.Lock()
				m := s.meta[name]
				if m == nil {
					m = &bucketMeta{}
					s.meta[name] = m
				}
				if v, ok := patch["labels"]; ok {
					var labels map[string]*string
					_ = json.Unmarshal(v, &labels)
					if m.Labels == nil {
						m.Labels = map[string]string{}
					}
					for k, v := range labels {
						if v == nil {
							delete(m.Labels, k)
						} else {
							m.Labels[k] = *v
						}
					}
				}
				if v, ok := patch["iamConfiguration"]; ok {
					m.IamConfiguration = v
				}
				if v, ok := patch["lifecycle"]; ok {
					m.Lifecycle = v
				}
				s.mu.Unlock()
			}
			s.answer(w, rec, name)
		case bucketPath && r.Method == http.MethodGet:
			name, _ := url.PathUnescape(strings.TrimPrefix(p, "/b/"))
			s.answer(w, s.serve(next, r, nil), name)
		case bucketPath && r.Method == http.MethodDelete:
			name, _ := url.PathUnescape(strings.TrimPrefix(p, "/b/"))
			rec := s.serve(next, r, nil)
			if rec.Code/100 == 2 {
				s.mu.Lock()
				delete(s.meta, name)
				s.mu.Unlock()
			}
			s.answer(w, rec, "")
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// serve runs r (with body, when given) through next and records the answer.
func (s *Storage) serve(next http.Handler, r *http.Request, body []byte) *httptest.ResponseRecorder {
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	rec := httptest.NewRecorder()
	next.ServeHTTP(rec, r)
	return rec
}

// answer writes rec to w, with the kept fields of bucket merged into a
// successful bucket resource.
func (s *Storage) answer(w http.ResponseWriter, rec *httptest.ResponseRecorder, bucket string) {
	body := rec.Body.Bytes()
	if bucket != "" && rec.Code == http.StatusOK {
		var res map[string]any
		if json.Unmarshal(body, &res) == nil {
			s.mu.Lock()
			if m := s.meta[bucket]; m != nil {
				if m.Labels != nil {
					res["labels"] = m.Labels
				}
				if m.IamConfiguration != nil {
					res["iamConfiguration"] = m.IamConfiguration
				}
				if m.Lifecycle != nil {
					res["lifecycle"] = m.Lifecycle
				}
				if m.Location != "" {
					res["location"] = m.Location
				}
			}
			s.mu.Unlock()
			body, _ = json.Marshal(res)
		}
	}
	for k, v := range rec.Header() {
		if k != "Content-Length" {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body)
}
