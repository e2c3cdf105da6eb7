package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wfhq/wf/internal/egress"
	"github.com/wfhq/wf/internal/secretbox"
)

// channelRE is what a NOTIFY channel name may be: a plain PostgreSQL
// identifier, so it needs no quoting.
// At most maxIdentifier bytes, checked apart: a counted repetition
// ({0,62}) compiles to a program ~60 times larger, kept by every wf process.
var channelRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// maxIdentifier is the longest PostgreSQL identifier.
const maxIdentifier = 63

// hexSHA256RE is a SHA-256 in hex.
var hexSHA256RE = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)

// MinTokenLength is the shortest plain token accepted.
const MinTokenLength = 16

// Validate checks every bound and relation of the configuration and returns
// all problems as Errors (nil when there is none). Each problem names the
// source of the value at fault when Load recorded one.
func (c *Config) Validate() error {
	var errs Errors
	add := func(field, format string, args ...any) {
		errs = append(errs, Error{Source: c.Origin(field), Field: field, Message: fmt.Sprintf(format, args...)})
	}

	if c.DatabaseURL != "" {
		if msg := checkDatabaseURL(c.DatabaseURL); msg != "" {
			add("database_url", "%s", msg)
		}
	}
	if c.Database.SessionURL != "" {
		switch {
		case c.DatabaseURL == "":
			add("database.session_url", "needs database_url: without it wf uses a local PostgreSQL of its own, with no pooler in front")
		default:
			if msg := checkDatabaseURL(c.Database.SessionURL); msg != "" {
				add("database.session_url", "%s", msg)
			}
		}
	}
	for _, u := range []struct{ key, url string }{{"database.read_url", c.Database.ReadURL}, {"catalog.database_url", c.Catalog.DatabaseURL}} {
		switch {
		case u.url == "":
		case c.DatabaseURL == "":
			add(u.key, "needs database_url: without it wf uses a local PostgreSQL of its own, with one database")
		default:
			if msg := checkDatabaseURL(u.url); msg != "" {
				add(u.key, "%s", msg)
			}
		}
	}
	if strings.TrimSpace(c.Name) == "" {
		add("name", "must not be empty")
	}
	if msg := checkListen(c.Listen); msg != "" {
		add("listen", "%s", msg)
	}
	if strings.TrimSpace(c.DataDir) == "" {
		add("data_dir", "must not be empty")
	}
	for i, s := range c.Specs {
		if strings.TrimSpace(s) == "" {
			add(fmt.Sprintf("specs[%d]", i), "must not be empty")
		}
	}
	if levels := []string{LogLevelDebug, LogLevelInfo, LogLevelWarn, LogLevelError}; !slices.Contains(levels, c.LogLevel) {
		add("log_level", "expected one of %s, got %q", strings.Join(levels, ", "), c.LogLevel)
	}
	if formats := []string{LogFormatAuto, LogFormatText, LogFormatJSON}; !slices.Contains(formats, c.LogFormat) {
		add("log_format", "expected one of %s, got %q", strings.Join(formats, ", "), c.LogFormat)
	}
	// The keys are read (files included) now, so wf validate --config
	// catches a missing file or a bad key before anything starts.
	if _, err := secretbox.ParseKeys(c.Secrets.Keys, os.ReadFile); err != nil {
		var entry *secretbox.EntryError
		if errors.As(err, &entry) {
			add(fmt.Sprintf("secrets.keys[%d]", entry.Index), "%v", entry.Err)
		} else {
			add("secrets.keys", "%v", err)
		}
	}
	if c.Slots < 1 {
		add("slots", "must be at least 1, got %d", c.Slots)
	}
	weighted := map[string]bool{}
	for i, w := range c.Fairness.Weights {
		field := fmt.Sprintf("fairness.weights[%d]", i)
		name, _, ok := parseWeight(w)
		switch {
		case !ok:
			add(field, "expected tenant=weight (a schema_name and a number above 0 and at most 1000, e.g. acme=2), got %q", w)
		case weighted[name]:
			add(field, "tenant %s has a weight already", name)
		}
		weighted[name] = true
	}

	for _, d := range []struct {
		field string
		value time.Duration
	}{
		{"poll_interval", c.PollInterval},
		{"heartbeat_interval", c.HeartbeatInterval},
		{"janitor_interval", c.JanitorInterval},
		{"maintenance_interval", c.MaintenanceInterval},
		{"tiles.cache_grace", c.Tiles.CacheGrace},
		{"events.unmatched_grace", c.Events.UnmatchedGrace},
		{"visibility_timeout", c.VisibilityTimeout},
		{"retention.completed", c.Retention.Completed},
		{"retention.failed", c.Retention.Failed},
		{"retention.dead_letter", c.Retention.DeadLetter},
		{"retention.dead_letter_events", c.Retention.DeadLetterEvents},
		{"http.read_timeout", c.HTTP.ReadTimeout},
		{"http.write_timeout", c.HTTP.WriteTimeout},
	} {
		if d.value <= 0 {
			add(d.field, "must be a positive duration, got %s", FormatDuration(d.value))
		}
	}
	if c.Grace < 0 {
		add("grace", "must not be negative, got %s", FormatDuration(c.Grace))
	}
	if c.HeartbeatInterval > 0 && c.VisibilityTimeout > 0 && c.HeartbeatInterval >= c.VisibilityTimeout {
		add("heartbeat_interval", "must be shorter than visibility_timeout (%s), or leases expire between heartbeats; got %s",
			FormatDuration(c.VisibilityTimeout), FormatDuration(c.HeartbeatInterval))
	}

	seen := map[string]string{}
	for _, ch := range []struct{ field, value string }{
		{"channels.task_queued", c.Channels.TaskQueued},
		{"channels.task_status_changed", c.Channels.TaskStatusChanged},
		{"channels.events", c.Channels.Events},
	} {
		if len(ch.value) > maxIdentifier || !channelRE.MatchString(ch.value) {
			add(ch.field, "expected a PostgreSQL identifier (letters, digits and underscores, not starting with a digit, at most 63 characters), got %q", ch.value)
			continue
		}
		if other, dup := seen[ch.value]; dup {
			add(ch.field, "must differ from %s (both are %q)", other, ch.value)
		}
		seen[ch.value] = ch.field
	}
	if c.Retention.PartitionsAhead < 1 {
		add("retention.partitions_ahead", "must be at least 1, got %d", c.Retention.PartitionsAhead)
	}

	c.validateTokens(add)

	if c.Report.BucketURL != "" {
		if msg := checkBucketURL(c.Report.BucketURL); msg != "" {
			add("report.bucket_url", "%s", msg)
		}
	}
	if c.Tiles.CacheURL != "" {
		if msg := checkBucketURL(c.Tiles.CacheURL); msg != "" {
			add("tiles.cache_url", "%s", msg)
		}
	}
	for i, cidr := range c.Outbound.Allow {
		if _, err := egress.NewPolicy([]string{cidr}); err != nil {
			add(fmt.Sprintf("outbound.allow[%d]", i), "expected a CIDR prefix such as 10.0.0.0/8 or an address, got %q", cidr)
		}
	}
	for i, root := range c.Files.LocalRoots {
		field := fmt.Sprintf("files.local_roots[%d]", i)
		switch {
		case strings.TrimSpace(root) == "":
			add(field, "must not be empty")
		case !filepath.IsAbs(root):
			add(field, "expected an absolute folder (Load resolves relative ones against the working folder), got %q", root)
		}
	}
	c.validateGCP(add)
	if c.HTTP.MaxBodyBytes < 1 {
		add("http.max_body_bytes", "must be at least 1, got %d", c.HTTP.MaxBodyBytes)
	}
	if c.HTTP.MaxJSONDepth < 1 || c.HTTP.MaxJSONDepth > 10000 {
		add("http.max_json_depth", "must be from 1 to 10000, got %d", c.HTTP.MaxJSONDepth)
	}
	c.validateElasticsearch(add)
	c.validateWarehouse(add)
	return errs.orNil()
}

// uniqueName checks the name of entry i of list: required, and not that of
// an earlier entry (seen maps the names met so far to their index); what
// names it in the duplicate's message.
func uniqueName(add func(field, format string, args ...any), list string, i int, what, name string, seen map[string]int) {
	field := fmt.Sprintf("%s[%d].name", list, i)
	switch j, dup := seen[name]; {
	case strings.TrimSpace(name) == "":
		add(field, "required field is missing")
	case dup:
		add(field, "duplicate %s %q (also %s[%d])", what, name, list, j)
	default:
		seen[name] = i
	}
}

// validateTokens checks names, roles, catalogs and the token or its hash.
func (c *Config) validateTokens(add func(field, format string, args ...any)) {
	names := map[string]int{}
	hashes := map[string]int{}
	for i, t := range c.Tokens {
		p := fmt.Sprintf("tokens[%d]", i)
		uniqueName(add, "tokens", i, "token name", t.Name, names)
		if !t.Role.Valid() {
			add(p+".role", "expected one of client, worker, admin, got %q", t.Role)
		}
		if t.Role == RoleAdmin && len(t.Catalogs) > 0 {
			add(p+".catalogs", "an admin token sees every catalog; remove catalogs or use role client")
		}
		if t.Role != RoleWorker && len(t.TaskTypes) > 0 {
			add(p+".task_types", "only a worker token is limited to task types; remove task_types")
		}
		for j, tt := range t.TaskTypes {
			if strings.TrimSpace(tt) == "" {
				add(fmt.Sprintf("%s.task_types[%d]", p, j), "must not be empty")
			}
		}
		for j, cat := range t.Catalogs {
			if strings.TrimSpace(cat) == "" {
				add(fmt.Sprintf("%s.catalogs[%d]", p, j), "must not be empty")
			}
		}
		var hash string
		switch {
		case t.Token == "" && t.TokenSHA256 == "":
			add(p, "set token or token_sha256")
		case t.Token != "" && t.TokenSHA256 != "":
			add(p, "set token or token_sha256, not both")
		case t.Token != "" && len(t.Token) < MinTokenLength:
			add(p+".token", "must be at least %d characters long", MinTokenLength)
		case t.Token != "":
			hash = HashToken(t.Token)
		case !hexSHA256RE.MatchString(t.TokenSHA256):
			add(p+".token_sha256", "expected 64 hexadecimal digits (the SHA-256 of the token)")
		default:
			hash = strings.ToLower(t.TokenSHA256)
		}
		if hash == "" {
			continue
		}
		if j, dup := hashes[hash]; dup {
			add(p, "same token as tokens[%d]; every token must be different", j)
		}
		hashes[hash] = i
	}
}

// checkDatabaseURL checks the shape of a connection string without echoing
// it (it holds a password).
func checkDatabaseURL(s string) string {
	const expected = "expected postgres://user:password@host:port/database or key=value pairs"
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil {
			return "is not a valid URL; " + expected
		}
		if u.Scheme != "postgres" && u.Scheme != "postgresql" {
			return fmt.Sprintf("%s, got a %s:// URL", expected, u.Scheme)
		}
		return ""
	}
	if !strings.Contains(s, "=") {
		return expected
	}
	return ""
}

// checkListen checks a host:port address.
func checkListen(s string) string {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Sprintf("expected host:port such as 127.0.0.1:8080 or :8080, got %q", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Sprintf("expected a port number from 0 to 65535, got %q", port)
	}
	return ""
}

// checkBucketURL checks a report location: gs://bucket/prefix or
// file:///folder.
func checkBucketURL(s string) string {
	const expected = "expected gs://bucket/prefix or file:///folder"
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Sprintf("%s, got %q", expected, s)
	}
	switch u.Scheme {
	case "gs":
		if u.Host == "" {
			return fmt.Sprintf("%s: no bucket in %q", expected, s)
		}
	case "file":
		if u.Host != "" && u.Host != "localhost" || u.Path == "" {
			return fmt.Sprintf("%s (an absolute path after file://), got %q", expected, s)
		}
	default:
		return fmt.Sprintf("%s, got %q", expected, s)
	}
	return ""
}

// FormatDuration formats a duration the way a configuration file writes it:
// 720h rather than 720h0m0s.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// validateGCP checks the gcp section's templates, lifecycle ages, push
// endpoint and object path convention.
func (c *Config) validateGCP(add func(field, format string, args ...any)) {
	g := c.GCP
	for _, t := range []struct{ field, value string }{
		{"gcp.bucket_template", g.BucketTemplate},
		{"gcp.topic_template", g.TopicTemplate},
		{"gcp.subscription_template", g.SubscriptionTemplate},
	} {
		if !strings.Contains(t.value, "{catalog}") && !strings.Contains(t.value, "{schema}") {
			add(t.field, "must hold {catalog} or {schema}, so that every catalog has its own; got %q", t.value)
		}
	}
	if g.LifecycleDeleteAfterDays < 0 {
		add("gcp.lifecycle_delete_after_days", "must be 0 (no rule) or more, got %d", g.LifecycleDeleteAfterDays)
	}
	if g.LifecycleArchiveAfterDays < 0 {
		add("gcp.lifecycle_archive_after_days", "must be 0 (no rule) or more, got %d", g.LifecycleArchiveAfterDays)
	}
	if g.PushEndpoint != "" {
		if u, err := url.Parse(g.PushEndpoint); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			add("gcp.push_endpoint", "expected an absolute https URL such as https://wf.example.com/hooks/gcs, got %q", g.PushEndpoint)
		}
	}
	if g.PushServiceAccount != "" && !strings.Contains(g.PushServiceAccount, "@") {
		add("gcp.push_service_account", "expected a service account's e-mail address, got %q", g.PushServiceAccount)
	}
	if g.PushServiceAccount != "" && g.PushAudience == "" && g.PushEndpoint == "" {
		add("gcp.push_service_account", "needs gcp.push_endpoint or gcp.push_audience: the audience /hooks/gcs accepts in a push's token")
	}
	segs := strings.Split(g.ObjectPath, "/")
	if !strings.Contains(g.ObjectPath, "{collection}") || segs[len(segs)-1] != "{file}" || strings.Count(g.ObjectPath, "{file}") != 1 {
		add("gcp.object_path", "expected slash-separated segments with {collection} and ending in {file}, such as {catalog}/{collection}/{file}; got %q", g.ObjectPath)
	}
}

// tenantRE is what a tenant (schema_name) may be named: the catalogs'
// schema_name, or system; at most maxIdentifier bytes, checked apart.
var tenantRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// parseWeight parses one "tenant=weight" pair of fairness.weights.
func parseWeight(s string) (string, float64, bool) {
	name, num, ok := strings.Cut(strings.TrimSpace(s), "=")
	name = strings.TrimSpace(name)
	if !ok || len(name) > maxIdentifier || !tenantRE.MatchString(name) {
		return "", 0, false
	}
	w, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || !(w > 0 && w <= 1000) {
		return "", 0, false
	}
	return strings.TrimSpace(name), w, true
}
