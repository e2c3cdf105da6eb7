package redact

import (
	"cmp"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Folders hides the server's own folders in what an API client is shown: a
// task's outputs name the detailed report (file:///srv/wf/reports/…) or the
// tile cache it wrote, an error or an input may name a file. A path in one
// of the folders is shown under the folder's name instead, a file:// prefix
// included: file:///srv/wf/reports/s_acme/ingestion/1.ndjson is shown as
// <reports>/s_acme/ingestion/1.ndjson. A path in the folder of a tenant
// the reader is (<files root>/<tenant>/…) is shown relative to that folder,
// as the tenant names its files; in another tenant's, as
// <files>/<tenant>/…. (The handlers already name a tenant's files relative
// to its folder in their errors; this is the net under them.) Nil hides
// nothing.
type Folders struct {
	re    *regexp.Regexp    // (file://)?(one of the folders, longest first) and what ends a name
	names map[string]string // folder → its shown name
	roots map[string]bool   // the files roots: a folder per tenant in each
}

// NewFolders returns the Folders that hide the files roots (each shown as
// <files>, or relative for its reader's tenant) and the folders of named
// (folder → the name it is shown as, e.g. "reports"). A folder may be written as a
// file:// URL (reports.bucket_url, tiles.cache_url); relative folders,
// other URLs (gs://…) and "/" are ignored; a folder reached through links
// is hidden by both its names. Of two folders that hold the same path, the
// longer names it.
func NewFolders(roots []string, named map[string]string) *Folders {
	f := &Folders{names: map[string]string{}, roots: map[string]bool{}}
	all := map[string]string{}
	for dir, name := range named {
		all[dir] = name
	}
	for _, r := range roots {
		all[r] = rootName
	}
	for dir, name := range all {
		dir = filepath.FromSlash(strings.TrimPrefix(dir, "file://"))
		if !filepath.IsAbs(dir) {
			continue
		}
		dirs := []string{filepath.Clean(dir)}
		if resolved, err := filepath.EvalSymlinks(dir); err == nil && resolved != dirs[0] {
			dirs = append(dirs, resolved)
		}
		for _, d := range dirs {
			if d = strings.TrimSuffix(filepath.ToSlash(d), "/"); d != "" {
				f.names[d], f.roots[d] = name, name == rootName
			}
		}
	}
	if len(f.names) == 0 {
		return f
	}
	dirs := make([]string, 0, len(f.names))
	for d := range f.names {
		dirs = append(dirs, d)
	}
	// Longest first: a folder inside another is matched as itself.
	slices.SortFunc(dirs, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	for i, d := range dirs {
		dirs[i] = regexp.QuoteMeta(d)
	}
	f.re = regexp.MustCompile(`(?:file://)?(` + strings.Join(dirs, "|") + `)(?:[^A-Za-z0-9_.-]|$)`)
	return f
}

// rootName is how a files root is shown.
const rootName = "files"

// String returns s with the folders hidden from a reader who is the tenants
// that own reports true for (nil: none).
func (f *Folders) String(s string, own func(tenant string) bool) string {
	if f == nil || f.re == nil {
		return s
	}
	return string(f.Bytes([]byte(s), own))
}

// Bytes returns b (text, or a JSON document: the folders are plain text in
// it) with the folders hidden from a reader who is the tenants that own
// reports true for (nil: none); b itself when none occurs.
func (f *Folders) Bytes(b []byte, own func(tenant string) bool) []byte {
	if f == nil || f.re == nil {
		return b
	}
	var out []byte
	last, changed := 0, false
	for _, m := range f.re.FindAllSubmatchIndex(b, -1) {
		start, end := m[0], m[3] // the folder's end, not the byte after it
		dir := string(b[m[2]:end])
		out = append(out, b[last:start]...)
		if rel, ok := f.relative(b, end, dir, own); ok {
			end = rel // <root>/<tenant>/ of the reader's: dropped
		} else {
			out = append(append(out, '<'), f.names[dir]+">"...)
		}
		last, changed = end, true
	}
	if !changed {
		return b
	}
	return append(out, b[last:]...)
}

// relative reports whether the path at b[end:], after the folder dir, is in
// the folder of a tenant the reader is (dir a files root, then
// /<tenant>/), and where the path in that folder starts.
func (f *Folders) relative(b []byte, end int, dir string, own func(string) bool) (int, bool) {
	if !f.roots[dir] || own == nil || end >= len(b) || b[end] != '/' {
		return 0, false
	}
	seg := end + 1
	for seg < len(b) && (b[seg] >= 'a' && b[seg] <= 'z' || b[seg] >= '0' && b[seg] <= '9' || b[seg] == '_') {
		seg++
	}
	if seg == end+1 || seg >= len(b) || b[seg] != '/' || !own(string(b[end+1:seg])) {
		return 0, false
	}
	return seg + 1, true
}
