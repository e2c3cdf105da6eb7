package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// configSeeds are real configuration files: docs/configuration.md's example, the one
// TestLoadFullFile reads, and shapes the error tests use.
var configSeeds = []string{
	`database_url: postgres://wf:secret@db.internal/wf   # empty: a local PostgreSQL in data_dir
name: ingest            # service name: one leader per name
data_dir: ./.wf
specs: [specs]
slots: 100              # tasks running at once per instance
poll_interval: 1s       # follower poll; leader sweep
heartbeat_interval: 30s
visibility_timeout: 5m  # for task types that set none
grace: 30s
retention: {completed: 720h, failed: 720h, dead_letter: 2160h, dead_letter_events: 720h, partitions_ahead: 3}
`,
	fullFile("3a7bd3e2360a3d29eea436fcfb7e44c735d117c42d1c1835420b6b9942dd4f1b"),
	"", "~\n", "name: [\n", "name: a\n---\nname: b\n", "- a\n", "name: a\nname: b\n",
	"retention:\n  completd: 1h\n", "specs: [a, 3]\n", "tokens:\n  - {name: a, role: admin, token_sha256: abc}\n",
	"heartbeat_interval: 10m\n", "channels:\n  events: new_task_queued\n",
	"base: &b {completed: 1h}\nretention: *b\n", "specs: &s [a, b]\nfiles: {local_roots: *s}\n",
	"specs: &a [*a]\n",
}

// FuzzLoadFile checks that no configuration file makes Load panic or hang,
// and that every error it gives names the file or a field.
func FuzzLoadFile(f *testing.F) {
	for _, s := range configSeeds {
		f.Add([]byte(s))
	}
	// A fuzz function runs one input at a time in each process: the file
	// is rewritten in place rather than in a new folder for each input.
	dir := f.TempDir()
	path := filepath.Join(dir, DefaultFile)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(Options{File: path, WorkDir: dir, LookupEnv: envOf(nil)})
		if err == nil {
			if c == nil {
				t.Fatal("no configuration and no error")
			}
			return
		}
		var errs Errors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("want config.Errors, got %T: %v", err, err)
		}
		for _, e := range errs {
			// A relation Validate checks may blame a field left at its
			// default, which has no position.
			inFile := e.Source.Kind == SourceFile && e.Source.Name == path
			if e.Message == "" || !inFile && (e.Source.Kind != SourceDefault || e.Field == "") {
				t.Fatalf("error not placed in the file: %#v", e)
			}
		}
	})
}

// FuzzLoadEnv checks that no value of a WF_* variable or of a flag makes
// Load panic: each is refused with an error naming it, or taken.
func FuzzLoadEnv(f *testing.F) {
	for i, v := range []string{
		"", "x", "0", "-1", "100", "9223372036854775807", "1h30m", "-5s", "true", "maybe", "a, b,,c", ":8080",
		"postgres://wf@db/wf", `[{"name":"ci","role":"client","token":"0123456789abcdef0123"}]`,
		`[{"name":"ci","role":"root","token_sha256":"ab"}]`, `[{"x":1}]`, `[] []`, `{`,
	} {
		f.Add(uint8(i), v)
	}
	vars, keys := EnvVars(), Keys()
	for i, k := range keys {
		switch k {
		case "database_url":
			f.Add(uint8(i), "postgres://wf:a-long-secret-password@db:port/wf")
			f.Add(uint8(i), "mysql://wf:a-secret\x01password@db/wf")
			f.Add(uint8(i), "host=db password=a\x01secret")
		case "tokens":
			f.Add(uint8(i), `[{"name":"ci","role":"client","token":"a-long-secret-token-value","extra":1}]`)
			f.Add(uint8(i), `[{"name":"ci","role":"client","token":"a-long-secret-token-value"`)
			f.Add(uint8(i), "[{\"name\":\"ci\",\"role\":\"client\",\"token\":\"a-secret\x01token\"}]")
		}
	}
	dir := f.TempDir() // empty: no wf.yaml is read
	f.Fuzz(func(t *testing.T, pick uint8, value string) {
		// secret says the value set is a secret, which no error may echo.
		// Only a value with a control character is looked for: a message's
		// own text has none, so it cannot hold such a value by chance.
		secretLike := len(value) >= 8 && strings.ContainsFunc(value, func(r rune) bool { return r < 0x20 && r != '\n' })
		check := func(opts Options, secret bool) {
			opts.WorkDir = dir
			_, err := Load(opts)
			if err == nil {
				return
			}
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("want config.Errors, got %T: %v", err, err)
			}
			for _, e := range errs {
				if e.Message == "" || e.Source.Kind == SourceFile || e.Source.Kind == SourceDefault && e.Field == "" {
					t.Fatalf("badly placed error: %#v", e)
				}
				if secret && secretLike && strings.Contains(e.Error(), value) {
					t.Fatalf("error echoes a secret: %s", e.Error())
				}
			}
		}
		name, key := vars[int(pick)%len(vars)], keys[int(pick)%len(keys)]
		l, _ := leafByKey(key)
		check(Options{LookupEnv: envOf(map[string]string{name: value})}, l.secret())
		check(Options{LookupEnv: envOf(nil), Flags: map[string]string{key: value}}, l.secret())
		all := map[string]string{EnvNameAlias: value}
		for _, v := range vars {
			all[v] = value
		}
		check(Options{LookupEnv: envOf(all)}, false)
	})
}
