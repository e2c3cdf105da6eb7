package dbmigrate

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"strings"
	"testing/fstest"
)

// Part names which of wf's databases a migration run is for. The queue
// (schema tasks) and the catalog (schema catalog and the tenants' feature
// schemas) share one database unless catalog.database_url names another;
// each migration file says which of its statements belong to which with
// marker lines, "-- wf:database queue" and "-- wf:database catalog", each
// starting a section that runs to the next marker.
type Part string

const (
	// PartAll applies every statement: the queue and the catalog in one
	// database (the default). The SQL run is each file as written.
	PartAll Part = ""
	// PartQueue applies the queue's sections only.
	PartQueue Part = "queue"
	// PartCatalog applies the catalog's sections only.
	PartCatalog Part = "catalog"
)

// markerPrefix starts a line that opens a file's section for one database.
const markerPrefix = "-- wf:database "

// partFS returns fsys as the migrations of one part: every file keeps its
// name (so the numbering, and a database's version, stays that of the one
// sequence) and holds the sections of that part only, possibly none (then a
// no-op statement, which tern records all the same). PartAll returns fsys.
func partFS(fsys fs.FS, part Part) (fs.FS, error) {
	if part == PartAll {
		return fsys, nil
	}
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("error listing migrations: %w", err)
	}
	out := fstest.MapFS{}
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("error reading migration %s: %w", name, err)
		}
		sections, err := splitParts(name, b)
		if err != nil {
			return nil, err
		}
		sql := sections[part]
		if len(bytes.TrimSpace(sql)) == 0 {
			// tern refuses a migration without SQL; the step is recorded
			// all the same, so the numbering stays one sequence.
			sql = []byte("-- nothing for the " + string(part) + " database in this migration\nSELECT 1;\n")
		}
		out[name] = &fstest.MapFile{Data: sql, Mode: 0o444}
	}
	return out, nil
}

// splitParts splits one migration file into its queue and catalog
// sections. Before the first marker only comments and blank lines may
// stand; a file with a statement there, or with an unknown marker, is an
// error (a statement must say where it runs).
func splitParts(name string, b []byte) (map[Part][]byte, error) {
	out := map[Part][]byte{PartQueue: nil, PartCatalog: nil}
	var cur Part = PartAll
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, markerPrefix); ok {
			switch p := Part(strings.TrimSpace(rest)); p {
			case PartQueue, PartCatalog:
				cur = p
				continue
			default:
				return nil, fmt.Errorf("migration %s:%d: unknown database %q (want queue or catalog)", name, n, p)
			}
		}
		if cur == PartAll {
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "--") {
				return nil, fmt.Errorf("migration %s:%d: a statement before the first %q line: say which database it is for", name, n, markerPrefix+"queue|catalog")
			}
			continue
		}
		out[cur] = append(append(out[cur], line...), '\n')
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("error reading migration %s: %w", name, err)
	}
	return out, nil
}
