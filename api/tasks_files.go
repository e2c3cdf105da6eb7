package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/wfhq/wf/internal/objio"
	"github.com/wfhq/wf/wftype"
)

// Task files: what a task wrote that its reader may fetch over HTTP.
const (
	// fileReport is the detailed report (outputs.report_url).
	fileReport = "report"
	// fileExport is an export's file (outputs.destination).
	fileExport = "export"
)

// getTaskFile answers GET /tasks/{task_id}/files/{name}: the detailed
// report ("report", outputs.report_url) or the exported file ("export",
// outputs.destination of a completed export) of a task, streamed, with
// Range requests for files on the local disk. Who may read the task may
// fetch its files: a task of a tenant or type the token may not see
// answers 404, as a missing one. A report is read only from the report
// location (report.bucket_url) and an export only from the task's
// tenant's folder under files.local_roots (or its bucket), whatever the
// outputs say.
func (s *Server) getTaskFile(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, prob := pathTaskID(r, "task_id")
	if prob != nil {
		return prob
	}
	name := r.PathValue("name")
	if name != fileReport && name != fileExport {
		return notFound("no file %q of a task: the files are %q and %q", name, fileReport, fileExport)
	}
	t, err := s.visibleTask(r.Context(), p, id)
	if err != nil {
		return err
	}
	var out struct {
		ReportURL   string `json:"report_url"`
		Destination string `json:"destination"`
	}
	_ = json.Unmarshal(t.Outputs, &out) // outputs of another shape have neither
	var loc string
	var open func(ctx context.Context, loc string) (io.ReadCloser, error)
	switch name {
	case fileReport:
		loc = out.ReportURL
		open = s.openReport
	case fileExport:
		if t.Status == wftype.StatusCompleted && t.TaskType == exportTaskType {
			loc = out.Destination
		}
		open = func(ctx context.Context, loc string) (io.ReadCloser, error) {
			return s.openExport(ctx, t.SchemaName, loc)
		}
	}
	if loc == "" {
		return notFound("task %s has no %s file", id.UUID, name)
	}
	f, err := open(r.Context(), loc)
	if errors.Is(err, objio.ErrNotFound) || errors.Is(err, objio.ErrForbidden) || errors.Is(err, objio.ErrInvalid) || errors.Is(err, errNotServed) {
		return notFound("the %s file of task %s is not there any more", name, id.UUID)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	// The file goes out as it was written: the folder redaction of JSON
	// answers (shownWriter) would change its bytes, and its length under a
	// Range request.
	if sw, ok := w.(*shownWriter); ok {
		w = sw.ResponseWriter
	}
	base := path.Base(strings.TrimSuffix(loc, "/"))
	w.Header().Set("Content-Type", fileType(base))
	w.Header().Set("Content-Disposition", `attachment; filename="`+strings.Map(safeFileRune, base)+`"`)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if rs, ok := f.(io.ReadSeeker); ok {
		// A local file: net/http serves Range, If-Range and HEAD.
		http.ServeContent(w, r, "", modTime(f), rs)
		return nil
	}
	w.Header().Set("Accept-Ranges", "none")
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, f) // a client gone is the end of it
	return nil
}

// exportTaskType is the task type whose destination is an export file.
const exportTaskType = "export_features"

// errNotServed: a location outside what the route serves.
var errNotServed = errors.New("not a location this server serves")

// openReport opens a detailed report: only one under the report location
// (Config.ReportsURL: file:///folder or gs://bucket/prefix).
func (s *Server) openReport(ctx context.Context, loc string) (io.ReadCloser, error) {
	base := strings.TrimRight(s.cfg.ReportsURL, "/")
	if base == "" {
		return nil, errNotServed
	}
	if dir, ok := strings.CutPrefix(base, "file://"); ok {
		// A local report folder: the report is a path (or file:// URL) in it,
		// opened through a root of that folder only.
		p := strings.TrimPrefix(loc, "file://")
		if !filepath.IsAbs(p) {
			return nil, errNotServed
		}
		return objio.New(objio.Config{LocalRoots: []string{dir}}).Open(ctx, p)
	}
	if !strings.HasPrefix(loc, base+"/") || strings.Contains(loc[len(base):], "/../") {
		return nil, errNotServed
	}
	return objio.Or(s.cfg.Files).Open(ctx, loc) // a gs:// object under the prefix
}

// openExport opens an export's destination as its tenant's file: a local
// one only in the tenant's folder, a bucket object as the server reaches
// buckets; nothing over http(s).
func (s *Server) openExport(ctx context.Context, tenant, loc string) (io.ReadCloser, error) {
	if u, err := url.Parse(loc); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		return nil, errNotServed
	}
	if s.cfg.Files == nil {
		return nil, errNotServed // without the roots, nothing says what is the tenant's
	}
	objs, err := s.cfg.Files.Tenant(tenant)
	if err != nil {
		return nil, err
	}
	return objs.Open(ctx, loc)
}

// modTime is a local file's modification time (zero when unknown: no
// Last-Modified).
func modTime(f io.Reader) time.Time {
	if st, ok := f.(interface{ Stat() (os.FileInfo, error) }); ok {
		if fi, err := st.Stat(); err == nil {
			return fi.ModTime()
		}
	}
	return time.Time{}
}

// fileType is the media type of a file by its name.
func fileType(name string) string {
	switch {
	case strings.HasSuffix(name, ".ndjson.gz"), strings.HasSuffix(name, ".gz"):
		return "application/gzip"
	case strings.HasSuffix(name, ".ndjson"), strings.HasSuffix(name, ".geojsonl"), strings.HasSuffix(name, ".geojsons"):
		return "application/x-ndjson"
	case strings.HasSuffix(name, ".geojson"):
		return "application/geo+json"
	case strings.HasSuffix(name, ".csv"):
		return "text/csv"
	case strings.HasSuffix(name, ".json"):
		return "application/json"
	}
	return "application/octet-stream"
}

// safeFileRune keeps a file name's rune in a Content-Disposition header.
func safeFileRune(r rune) rune {
	if r < 0x20 || r == '"' || r == '\\' || r > 0x7e {
		return '_'
	}
	return r
}
