// Package livetest decides where a contract test of a cloud task type runs:
// against the in-process fakes (always, in make test) or against the real
// service (make test-live, when its settings are in the environment).
//
// A contract is one test function taking a backend; the package's tests run
// it as two subtests, "fake" and "live". The live one runs only when
// WF_LIVE=1 (make test-live sets it) and the service's settings are set;
// otherwise it is skipped with a message naming what is missing. Live runs
// name what they create uniquely (Name) and delete it in t.Cleanup.
// docs/live-tests.md lists the variables and what a run costs.
package livetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2/google"
)

// The environment of a live run.
const (
	// EnvLive, set to 1, runs the live subtests (make test-live).
	EnvLive = "WF_LIVE"
	// EnvGCPProject is the Google Cloud project the live GCP tests create
	// their buckets, topics, subscriptions and datasets in; credentials
	// are Application Default Credentials.
	EnvGCPProject = "WF_LIVE_GCP_PROJECT"
	// EnvGCPLocation is where live buckets and datasets are created;
	// default EU.
	EnvGCPLocation = "WF_LIVE_GCP_LOCATION"
	// EnvGCPRegion is where live Cloud Run jobs are created; default
	// europe-west1.
	EnvGCPRegion = "WF_LIVE_GCP_REGION"
	// EnvGCPPushServiceAccount is the service account whose OIDC token the
	// live push subscriptions carry (gcp.push_service_account); the
	// credentials must be allowed to act as it.
	EnvGCPPushServiceAccount = "WF_LIVE_GCP_PUSH_SERVICE_ACCOUNT"
	// EnvGCPPushEndpoint is the endpoint the live push subscriptions name
	// (gcp.push_endpoint); default DefaultPushEndpoint. The live tests
	// receive the notifications through a pull subscription of their own.
	EnvGCPPushEndpoint = "WF_LIVE_GCP_PUSH_ENDPOINT"
	// EnvESAddresses are the live Elasticsearch cluster's URLs,
	// comma-separated.
	EnvESAddresses = "WF_LIVE_ES_ADDRESSES"
	// EnvESAPIKey, or EnvESUsername and EnvESPassword, authenticate to it.
	EnvESAPIKey   = "WF_LIVE_ES_API_KEY"
	EnvESUsername = "WF_LIVE_ES_USERNAME"
	EnvESPassword = "WF_LIVE_ES_PASSWORD"
)

// DefaultPushEndpoint is the push endpoint of the live push subscriptions
// when EnvGCPPushEndpoint is not set: a name that never resolves, so the
// subscription's own deliveries go nowhere while the test lives.
const DefaultPushEndpoint = "https://wf-live-test.invalid/hooks/gcs"

// Live says whether this is a live run (EnvLive=1).
func Live() bool { return os.Getenv(EnvLive) == "1" }

// skipUnlessLive skips t unless this is a live run.
func skipUnlessLive(t testing.TB) {
	t.Helper()
	if !Live() {
		t.Skipf("live backend: not a live run (%s=1, set by make test-live)", EnvLive)
	}
}

// GCP are a live run's Google Cloud settings.
type GCP struct {
	Project            string
	Location           string
	Region             string
	PushServiceAccount string
	PushEndpoint       string
}

// RequireGCP returns the live Google Cloud settings, or skips t naming what
// is missing: a live run, the project, Application Default Credentials,
// and, when push is true, the push service account.
func RequireGCP(t testing.TB, push bool) GCP {
	t.Helper()
	skipUnlessLive(t)
	g := GCP{Project: os.Getenv(EnvGCPProject), Location: os.Getenv(EnvGCPLocation), Region: os.Getenv(EnvGCPRegion),
		PushServiceAccount: os.Getenv(EnvGCPPushServiceAccount), PushEndpoint: os.Getenv(EnvGCPPushEndpoint)}
	if g.Project == "" {
		t.Skipf("live Google Cloud: %s is not set (the project the test creates its resources in)", EnvGCPProject)
	}
	if push && g.PushServiceAccount == "" {
		t.Skipf("live Google Cloud: %s is not set (the push subscriptions' service account)", EnvGCPPushServiceAccount)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := google.FindDefaultCredentials(ctx); err != nil {
		t.Skipf("live Google Cloud: no Application Default Credentials (gcloud auth application-default login, or GOOGLE_APPLICATION_CREDENTIALS): %v", err)
	}
	if g.Location == "" {
		g.Location = "EU"
	}
	if g.Region == "" {
		g.Region = "europe-west1"
	}
	if g.PushEndpoint == "" {
		g.PushEndpoint = DefaultPushEndpoint
	}
	return g
}

// ES are a live run's Elasticsearch settings.
type ES struct {
	Addresses                  []string
	APIKey, Username, Password string
}

// RequireES returns the live Elasticsearch settings, or skips t naming
// what is missing.
func RequireES(t testing.TB) ES {
	t.Helper()
	skipUnlessLive(t)
	raw := os.Getenv(EnvESAddresses)
	if raw == "" {
		t.Skipf("live Elasticsearch: %s is not set (the cluster's URLs, comma-separated)", EnvESAddresses)
	}
	var es ES
	for _, a := range strings.Split(raw, ",") {
		if a = strings.TrimSpace(a); a != "" {
			es.Addresses = append(es.Addresses, a)
		}
	}
	es.APIKey, es.Username, es.Password = os.Getenv(EnvESAPIKey), os.Getenv(EnvESUsername), os.Getenv(EnvESPassword)
	return es
}

// Name returns a name unique to this run, for what a live test creates:
// prefix, the UTC date and a random suffix, in lower-case letters, digits
// and '-' (valid for buckets, topics, indices and, with '-' made '_',
// datasets). The date lets an operator find and remove what a killed run
// left.
func Name(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + time.Now().UTC().Format("20060102") + "-" + hex.EncodeToString(b)
}

// Backends runs contract once per backend, each as a subtest named by its
// key: "fake" and "live", in that order. A backend function may skip its
// subtest (a live one without its settings).
func Backends[B any](t *testing.T, fake, live func(t *testing.T) B, contract func(t *testing.T, b B)) {
	t.Helper()
	for _, kb := range []struct {
		name string
		make func(t *testing.T) B
	}{{"fake", fake}, {"live", live}} {
		t.Run(kb.name, func(t *testing.T) {
			t.Helper()
			contract(t, kb.make(t))
		})
	}
}
