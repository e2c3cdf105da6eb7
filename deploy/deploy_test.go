// Package deploy holds the deployment kit (Dockerfile, compose file,
// Kubernetes manifests, systemd unit). There is no Docker daemon or cluster
// in CI, so these tests read the files and check what would otherwise only
// fail in production: every YAML document parses, the probes name real
// unauthenticated routes on the port wf listens on, every WF_* variable is
// one wf reads, the shipped wf.yaml loads, and the shutdown grace ends
// before the orchestrator's kill. `make check-deploy` builds the binary with
// the Dockerfile's own script and checks it is static.
package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/schemas"
)

// handBack is the time wf may need after grace to hand unfinished tasks
// back and exit; the orchestrator's kill must come later than grace plus it.
const handBack = 10 * time.Second

// kubernetesDefaultTermination is terminationGracePeriodSeconds when a pod
// sets none.
const kubernetesDefaultTermination = 30 * time.Second

// docs reads every YAML document of a file into generic maps.
func docs(t *testing.T, path string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	var out []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "parsing %s", path)
		if d != nil {
			out = append(out, d)
		}
	}
	require.NotEmpty(t, out, "%s holds no YAML document", path)
	return out
}

// get walks a path of map keys and list indexes.
func get(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			require.True(t, ok, "expected a mapping at %v", path)
			v = m[k]
		case int:
			l, ok := v.([]any)
			require.True(t, ok && k < len(l), "expected a list of more than %d at %v", k, path)
			v = l[k]
		}
	}
	return v
}

// publicRoutes are the OpenAPI paths with a GET that needs no token.
func publicRoutes(t *testing.T) []string {
	t.Helper()
	var doc struct {
		Paths map[string]struct {
			Get *struct {
				Security *[]any `json:"security"`
			} `json:"get"`
		} `json:"paths"`
	}
	raw, err := schemas.Read("openapi.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &doc))
	var out []string
	for p, ops := range doc.Paths {
		if op := ops.Get; op != nil && op.Security != nil && len(*op.Security) == 0 {
			out = append(out, p)
		}
	}
	return out
}

// knownEnv reports whether name is a variable wf reads.
func knownEnv(name string) bool {
	return slices.Contains(config.EnvVars(), name) || name == config.EnvConfigFile || name == config.EnvNameAlias
}

// loadConfig loads a wf.yaml text as wf would, with env on top.
func loadConfig(t *testing.T, text string, env map[string]string) *config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wf.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	cfg, err := config.Load(config.Options{File: path, LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	require.NoError(t, err)
	return cfg
}

func seconds(t *testing.T, v any) time.Duration {
	t.Helper()
	n, ok := v.(int)
	require.True(t, ok, "expected whole seconds, got %v", v)
	return time.Duration(n) * time.Second
}

func TestDefaultGraceFitsKubernetesDefault(t *testing.T) {
	t.Parallel()
	require.LessOrEqual(t, config.Default().Grace+handBack, kubernetesDefaultTermination,
		"the default grace must leave time to hand tasks back before Kubernetes' default SIGKILL")
}

func TestKubernetesManifests(t *testing.T) {
	t.Parallel()
	byKind := map[string]map[string]any{}
	var kustomization map[string]any
	files, err := filepath.Glob("kubernetes/*.yaml")
	require.NoError(t, err)
	for _, f := range files {
		for _, d := range docs(t, f) {
			kind, _ := d["kind"].(string)
			require.NotEmpty(t, kind, "%s: a document without kind", f)
			require.NotEmpty(t, d["apiVersion"], "%s: %s without apiVersion", f, kind)
			if kind == "Kustomization" {
				kustomization = d
				continue
			}
			require.NotContains(t, byKind, kind, "%s: a second %s", f, kind)
			byKind[kind] = d
		}
	}
	for _, kind := range []string{"Deployment", "ConfigMap", "Secret", "Service", "PodDisruptionBudget"} {
		require.Contains(t, byKind, kind)
	}
	// The kustomization applies every manifest.
	require.NotNil(t, kustomization)
	var listed []string
	for _, r := range get(t, kustomization, "resources").([]any) {
		listed = append(listed, "kubernetes/"+r.(string))
	}
	var manifests []string
	for _, f := range files {
		if filepath.Base(f) != "kustomization.yaml" {
			manifests = append(manifests, f)
		}
	}
	require.ElementsMatch(t, manifests, listed)

	dep := byKind["Deployment"]
	podLabels := get(t, dep, "spec", "template", "metadata", "labels").(map[string]any)
	require.Equal(t, podLabels, get(t, dep, "spec", "selector", "matchLabels"))
	require.Equal(t, podLabels, get(t, byKind["PodDisruptionBudget"], "spec", "selector", "matchLabels"))
	require.Equal(t, podLabels, get(t, byKind["Service"], "spec", "selector"))
	require.NotNil(t, get(t, byKind["PodDisruptionBudget"], "spec", "maxUnavailable"))
	require.GreaterOrEqual(t, get(t, dep, "spec", "replicas"), 2, "one instance cannot survive a disruption")

	pod := get(t, dep, "spec", "template", "spec")
	container := get(t, pod, "containers", 0)

	// wf.yaml from the ConfigMap loads, with the Secret's variables on top.
	secretEnv := map[string]string{}
	for k, v := range get(t, byKind["Secret"], "stringData").(map[string]any) {
		require.True(t, knownEnv(k), "Secret key %s is not a variable wf reads", k)
		secretEnv[k] = v.(string)
	}
	cm := byKind["ConfigMap"]
	require.Equal(t, get(t, cm, "metadata", "name"), get(t, pod, "volumes", 0, "configMap", "name"))
	require.Equal(t, get(t, byKind["Secret"], "metadata", "name"), get(t, container, "envFrom", 0, "secretRef", "name"))
	cfg := loadConfig(t, get(t, cm, "data", "wf.yaml").(string), secretEnv)
	require.NotEmpty(t, cfg.DatabaseURL, "the Secret must give the database URL")
	require.NotEmpty(t, cfg.Tokens, "the Secret must give API tokens")
	host, port, err := net.SplitHostPort(cfg.Listen)
	require.NoError(t, err)
	require.Equal(t, "0.0.0.0", host, "wf must listen beyond loopback for the kubelet and the Service")

	// WF_CONFIG points into the ConfigMap's mount.
	var configFile string
	for _, e := range get(t, container, "env").([]any) {
		name := get(t, e, "name").(string)
		require.True(t, knownEnv(name), "env %s is not a variable wf reads", name)
		if name == config.EnvConfigFile {
			configFile = get(t, e, "value").(string)
		}
	}
	var configMount string
	for _, m := range get(t, container, "volumeMounts").([]any) {
		if get(t, m, "name") == "config" {
			configMount = get(t, m, "mountPath").(string)
		}
	}
	require.Equal(t, filepath.Join(configMount, "wf.yaml"), configFile)

	// The probes name real, unauthenticated routes on the port wf listens on.
	ports := map[string]int{}
	for _, p := range get(t, container, "ports").([]any) {
		ports[get(t, p, "name").(string)] = get(t, p, "containerPort").(int)
	}
	routes := publicRoutes(t)
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		got := get(t, container, probe, "httpGet")
		require.Equal(t, path, get(t, got, "path"), probe)
		require.Contains(t, routes, path, "%s: %s is not an unauthenticated GET route", probe, path)
		require.Equal(t, port, strconv.Itoa(ports[get(t, got, "port").(string)]), "%s: the probe's port is not the one wf listens on", probe)
	}
	require.Contains(t, routes, get(t, container, "startupProbe", "httpGet", "path"))

	// Grace and hand-back end before the kubelet's SIGKILL.
	termination := seconds(t, get(t, pod, "terminationGracePeriodSeconds"))
	require.LessOrEqual(t, cfg.Grace+handBack, termination,
		"grace %s plus hand-back must end before terminationGracePeriodSeconds %s", cfg.Grace, termination)
}

// stages returns the Dockerfile's stage names.
func stages(t *testing.T) (string, []string) {
	t.Helper()
	raw, err := os.ReadFile("Dockerfile")
	require.NoError(t, err)
	var names []string
	for _, m := range regexp.MustCompile(`(?mi)^FROM\s+\S+\s+AS\s+(\S+)`).FindAllStringSubmatch(string(raw), -1) {
		names = append(names, m[1])
	}
	return string(raw), names
}

func TestDockerfile(t *testing.T) {
	t.Parallel()
	text, names := stages(t)
	require.Equal(t, []string{"build", "gdal", "static"}, names, "the last stage is the default image")
	require.Contains(t, text, "deploy/build.sh /out/wf && deploy/check-static.sh /out/wf",
		"the image must be built by the script CI checks")
	require.Contains(t, text, "gdal-bin")
	for _, m := range regexp.MustCompile(`\b(WF_[A-Z_]+)=`).FindAllStringSubmatch(text, -1) {
		require.True(t, knownEnv(m[1]), "Dockerfile sets %s, which wf does not read", m[1])
	}
	goVersion := regexp.MustCompile(`ARG GO_VERSION=(\S+)`).FindStringSubmatch(text)
	require.NotNil(t, goVersion)
	mod, err := os.ReadFile("../go.mod")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^go `+regexp.QuoteMeta(goVersion[1])+`(\.\d+)?$`, string(mod), "the builder's Go must be the module's")
}

func TestCompose(t *testing.T) {
	t.Parallel()
	d := docs(t, "compose.yaml")
	require.Len(t, d, 1)
	services := get(t, d[0], "services").(map[string]any)
	require.ElementsMatch(t, []string{"postgres", "wf-leader", "wf-follower"}, keys(services))
	require.Contains(t, get(t, services, "postgres", "image"), "postgis")
	_, names := stages(t)
	for _, name := range []string{"wf-leader", "wf-follower"} {
		svc := services[name]
		require.Equal(t, "deploy/Dockerfile", get(t, svc, "build", "dockerfile"), name)
		require.Contains(t, names, get(t, svc, "build", "target"), name)
		env := map[string]string{}
		for k, v := range get(t, svc, "environment").(map[string]any) {
			require.True(t, knownEnv(k), "%s: %s is not a variable wf reads", name, k)
			env[k] = v.(string)
		}
		require.Contains(t, env[config.EnvVars()[0]], "@postgres:", "%s: the database is the postgres service", name)
		cfg := loadConfig(t, "", env)
		require.Equal(t, "wf", cfg.Name)
		_, port, err := net.SplitHostPort(cfg.Listen)
		require.NoError(t, err)
		var published []string
		for _, p := range get(t, svc, "ports").([]any) {
			published = append(published, p.(string))
		}
		require.Len(t, published, 1)
		require.True(t, strings.HasSuffix(published[0], ":"+port), "%s publishes %s, wf listens on %s", name, published[0], port)
		stop, err := time.ParseDuration(get(t, svc, "stop_grace_period").(string))
		require.NoError(t, err)
		require.LessOrEqual(t, cfg.Grace+handBack, stop, "%s: grace plus hand-back must end before docker's SIGKILL", name)
	}
	require.Equal(t, "service_healthy", get(t, services, "wf-leader", "depends_on", "postgres", "condition"))
}

func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("systemd/wf.service")
	require.NoError(t, err)
	text := string(raw)
	for _, section := range []string{"[Unit]", "[Service]", "[Install]"} {
		require.Contains(t, text, section)
	}
	m := regexp.MustCompile(`(?m)^TimeoutStopSec=(\S+)$`).FindStringSubmatch(text)
	require.NotNil(t, m)
	stop, err := time.ParseDuration(m[1])
	require.NoError(t, err)
	require.LessOrEqual(t, config.Default().Grace+handBack, stop)
	require.Regexp(t, `(?m)^ExecStart=/usr/local/bin/wf .*\brun$`, text)
	for _, m := range regexp.MustCompile(`\b(WF_[A-Z_]+)=`).FindAllStringSubmatch(text, -1) {
		require.True(t, knownEnv(m[1]), "the unit sets %s, which wf does not read", m[1])
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
