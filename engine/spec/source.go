package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Source is the content of one spec file. Name is how errors refer to it
// (usually the path it was read from).
type Source struct {
	Name string
	Data []byte
}

// isSpecFile reports whether a file name has a YAML extension.
func isSpecFile(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".yaml" || ext == ".yml"
}

// ReadSources reads the spec files at paths. A path that is a file is read
// whatever its extension; a directory is walked recursively for *.yaml and
// *.yml files (hidden directories are skipped). Files are returned sorted by
// path, each once. It fails when a path does not exist or when no spec file is
// found at all.
func ReadSources(paths ...string) ([]Source, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("error reading specs: %s does not exist", p)
			}
			return nil, fmt.Errorf("error reading specs: %w", err)
		}
		if !info.IsDir() {
			files = append(files, filepath.Clean(p))
			continue
		}
		found, err := walkSpecDir(p)
		if err != nil {
			return nil, err
		}
		files = append(files, found...)
	}
	slices.Sort(files)
	files = slices.Compact(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("error reading specs: no *.yaml or *.yml files in %s", strings.Join(paths, ", "))
	}
	sources := make([]Source, 0, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("error reading spec file: %w", err)
		}
		sources = append(sources, Source{Name: f, Data: data})
	}
	return sources, nil
}

// walkSpecDir lists the spec files under dir.
func walkSpecDir(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if isSpecFile(d.Name()) {
			files = append(files, filepath.Clean(path))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("error reading spec directory %s: %w", dir, err)
	}
	return files, nil
}
