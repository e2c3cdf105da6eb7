package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DefaultFile is the configuration file read when none is named and it
// exists in the working folder.
const DefaultFile = "wf.yaml"

// Options say where Load finds the layers above the defaults.
type Options struct {
	// File is the configuration file named on the command line (--config).
	// Empty: $WF_CONFIG, else wf.yaml in WorkDir when it exists, else none.
	// A named file must exist.
	File string
	// WorkDir is where the default wf.yaml is looked for; empty means the
	// current folder. Paths inside the configuration are not resolved
	// against it.
	WorkDir string
	// LookupEnv reads an environment variable; nil means os.LookupEnv. Tests
	// pass their own so they can run in parallel.
	LookupEnv func(name string) (string, bool)
	// Flags are the command-line flags that were set, keyed by field path
	// (see Keys), with their text values. They override everything else;
	// errors name them as FlagName(key).
	Flags map[string]string
}

// Load builds the configuration: the defaults, then the file, then the
// environment, then the flags; then it validates the result and finishes
// it (plain tokens hashed and dropped, an empty report.bucket_url set to
// file://<data_dir>/reports, files.local_roots made absolute against the
// working folder, an empty list set to [<data_dir>/files]). The error, if
// any, is Errors listing every problem found in the failing layer, each
// naming its source.
//
// Empty environment variables count as unset.
func Load(opts Options) (*Config, error) {
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	env := func(name string) (string, bool) {
		v, ok := lookup(name)
		return v, ok && v != ""
	}
	c := Default()
	c.origins = map[string]Source{}

	path, via := opts.File, "--config"
	if path == "" {
		path, via = "", ""
		if p, ok := env(EnvConfigFile); ok {
			path, via = p, "environment variable "+EnvConfigFile
		}
	}
	if path == "" {
		path = filepath.Join(opts.WorkDir, DefaultFile)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			path = ""
		}
	}
	if path != "" {
		if errs := c.loadFile(path, via); len(errs) > 0 {
			return nil, errs
		}
	}

	var errs Errors
	for _, l := range leaves() {
		name := l.env
		raw, ok := env(name)
		if !ok && l.key == "name" {
			name = EnvNameAlias
			raw, ok = env(name)
		}
		if !ok && l.key == "secrets.keys" {
			name = EnvSecretKeyAlias
			raw, ok = env(name)
		}
		if !ok {
			continue
		}
		src := Source{Kind: SourceEnv, Name: name, Key: l.key}
		v, err := l.parse(raw)
		if err != nil {
			errs = append(errs, Error{Source: src, Field: l.key, Message: err.Error()})
			continue
		}
		c.set(l, v, src)
	}

	keys := make([]string, 0, len(opts.Flags))
	for k := range opts.Flags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		src := Source{Kind: SourceFlag, Name: FlagName(key), Key: key}
		l, ok := leafByKey(key)
		if !ok {
			errs = append(errs, Error{Source: src, Message: fmt.Sprintf("sets no known configuration field %q", key)})
			continue
		}
		v, err := l.parse(opts.Flags[key])
		if err != nil {
			errs = append(errs, Error{Source: src, Field: key, Message: err.Error()})
			continue
		}
		c.set(l, v, src)
	}
	if len(errs) > 0 {
		return nil, errs
	}

	c.resolveLocalRoots()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := c.finish(); err != nil {
		return nil, err
	}
	return c, nil
}

// finish hashes plain tokens and fills in the derived defaults.
func (c *Config) finish() error {
	c.hashTokens()
	if c.Report.BucketURL == "" {
		abs, err := filepath.Abs(filepath.Join(c.DataDir, "reports"))
		if err != nil {
			return Errors{{Source: c.Origin("data_dir"), Field: "data_dir", Message: fmt.Sprintf("cannot resolve the folder: %v", err)}}
		}
		c.Report.BucketURL = "file://" + filepath.ToSlash(abs)
	}
	if c.Tiles.CacheURL == "" {
		abs, err := filepath.Abs(filepath.Join(c.DataDir, "tiles"))
		if err != nil {
			return Errors{{Source: c.Origin("data_dir"), Field: "data_dir", Message: fmt.Sprintf("cannot resolve the folder: %v", err)}}
		}
		c.Tiles.CacheURL = "file://" + filepath.ToSlash(abs)
	}
	if len(c.Files.LocalRoots) == 0 {
		abs, err := filepath.Abs(filepath.Join(c.DataDir, "files"))
		if err != nil {
			return Errors{{Source: c.Origin("data_dir"), Field: "data_dir", Message: fmt.Sprintf("cannot resolve the folder: %v", err)}}
		}
		c.Files.LocalRoots = []string{abs}
	}
	return nil
}

// resolveLocalRoots makes files.local_roots absolute against the working
// folder, and clean; Validate refuses what stays relative (or empty).
func (c *Config) resolveLocalRoots() {
	for i, root := range c.Files.LocalRoots {
		if strings.TrimSpace(root) == "" {
			continue
		}
		if abs, err := filepath.Abs(root); err == nil {
			c.Files.LocalRoots[i] = abs
		}
	}
}
