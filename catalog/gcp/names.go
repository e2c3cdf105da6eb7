package gcp

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/wfhq/wf/wftype"
)

// wf's labels on every bucket, topic and subscription it provisions. Label
// values are lower-case letters, digits, '_' and '-' (at most 63), which
// catalog ids and schema names already are.
const (
	labelManaged = "wf-managed"
	labelTenant  = "wf-tenant"
	labelCatalog = "wf-catalog"
)

// errNoProject fails the gcp task types of an instance without gcp.project.
var errNoProject = wftype.Permanent(errors.New("gcp.project is not set (WF_GCP_PROJECT): wf does not know which Google Cloud project holds the catalogs' resources"))

// wantLabels are the labels of a catalog's resources.
func wantLabels(catalogID, schemaName string) map[string]string {
	return map[string]string{labelManaged: "true", labelTenant: schemaName, labelCatalog: catalogID}
}

// ownership says whose a resource is, by its labels.
type ownership int

const (
	ownedByTenant  ownership = iota // wf's, this tenant's
	ownedByOther                    // wf's, another tenant's
	ownedByNoOneWF                  // not labelled by wf: someone else's
)

func ownerOf(labels map[string]string, schemaName string) ownership {
	switch {
	case labels[labelManaged] != "true":
		return ownedByNoOneWF
	case labels[labelTenant] != schemaName:
		return ownedByOther
	}
	return ownedByTenant
}

// labelsDrift reports whether have lacks or differs in one of want's labels.
func labelsDrift(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return true
		}
	}
	return false
}

// mergeLabels returns have with want's labels set.
func mergeLabels(have, want map[string]string) map[string]string {
	out := make(map[string]string, len(have)+len(want))
	for k, v := range have {
		out[k] = v
	}
	for k, v := range want {
		out[k] = v
	}
	return out
}

// names are a catalog's resource names.
type names struct {
	Bucket string
	// Topic and Subscription are full resource names.
	Topic        string
	Subscription string
}

// The rules of a bucket name (3 to 63 bytes) and a Pub/Sub name (3 to 255
// bytes); the lengths are checked apart: as counted repetitions ({1,61},
// {2,254}) the programs were ~60 and ~250 times larger, kept by every wf
// process.
var (
	bucketRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*[a-z0-9]$`)
	pubsubRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._~+%-]*$`)
)

// expand fills a template's placeholders.
func expand(tmpl, project, catalogID, schemaName string) string {
	return strings.NewReplacer("{project}", project, "{catalog}", catalogID, "{schema}", schemaName).Replace(tmpl)
}

// fitBucket makes an expanded bucket name valid where it can: lower case,
// '_' kept, and a name longer than 63 characters shortened with a hash of
// the whole, so that two long names stay apart.
func fitBucket(name string) string {
	name = strings.ToLower(name)
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimRight(name[:54], "-_.") + "-" + hex.EncodeToString(sum[:])[:8]
}

// resourceNames expands the configured templates for a catalog and checks
// the results against Google's naming rules.
func (h *Handlers) resourceNames(catalogID, schemaName string) (names, error) {
	s := h.d.Settings
	bucket := fitBucket(expand(s.BucketTemplate, s.Project, catalogID, schemaName))
	if len(bucket) < 3 || len(bucket) > 63 || !bucketRE.MatchString(bucket) || strings.HasPrefix(bucket, "goog") || strings.Contains(bucket, "google") {
		return names{}, wftype.Permanent(fmt.Errorf("gcp.bucket_template gives %q for catalog %s, not a valid bucket name (3 to 63 lower-case letters, digits, '-', '_' or '.', starting and ending with a letter or digit, not starting with goog)", bucket, catalogID))
	}
	topic := expand(s.TopicTemplate, s.Project, catalogID, schemaName)
	sub := expand(s.SubscriptionTemplate, s.Project, catalogID, schemaName)
	for _, n := range []struct{ key, v string }{{"gcp.topic_template", topic}, {"gcp.subscription_template", sub}} {
		if len(n.v) < 3 || len(n.v) > 255 || !pubsubRE.MatchString(n.v) || strings.HasPrefix(n.v, "goog") {
			return names{}, wftype.Permanent(fmt.Errorf("%s gives %q for catalog %s, not a valid Pub/Sub name (3 to 255 letters, digits or -_.~+%%, starting with a letter, not starting with goog)", n.key, n.v, catalogID))
		}
	}
	return names{
		Bucket:       bucket,
		Topic:        "projects/" + s.Project + "/topics/" + topic,
		Subscription: "projects/" + s.Project + "/subscriptions/" + sub,
	}, nil
}

// objectPath is the path convention of a bucket's objects (gcp.object_path):
// segments that are literals or {catalog}, {collection}, {file}; {file} is
// last and takes the rest of the name.
type objectPath struct {
	segments []string
}

func parseObjectPath(s string) (objectPath, error) {
	segs := strings.Split(s, "/")
	var sawCollection bool
	for i, seg := range segs {
		switch seg {
		case "{file}":
			if i != len(segs)-1 {
				return objectPath{}, fmt.Errorf("{file} must be the last segment of %q", s)
			}
		case "{collection}":
			sawCollection = true
		case "{catalog}":
		case "":
			return objectPath{}, fmt.Errorf("%q has an empty segment", s)
		default:
			if strings.ContainsAny(seg, "{}") {
				return objectPath{}, fmt.Errorf("%q: unknown placeholder %s; use {catalog}, {collection} or {file}", s, seg)
			}
		}
	}
	if !sawCollection || segs[len(segs)-1] != "{file}" {
		return objectPath{}, fmt.Errorf("%q must hold {collection} and end with {file}, such as {catalog}/{collection}/{file}", s)
	}
	return objectPath{segments: segs}, nil
}

// match reads an object name by the convention: the collection and the
// file, or why the object does not follow it.
func (p objectPath) match(object, catalogID string) (collection, file string, why string) {
	parts := strings.SplitN(object, "/", len(p.segments))
	if len(parts) < len(p.segments) {
		return "", "", fmt.Sprintf("the object does not follow the path convention %s", strings.Join(p.segments, "/"))
	}
	for i, seg := range p.segments {
		switch seg {
		case "{catalog}":
			if parts[i] != catalogID {
				return "", "", fmt.Sprintf("the object's {catalog} segment %q is not the bucket's catalog %s", parts[i], catalogID)
			}
		case "{collection}":
			collection = parts[i]
		case "{file}":
			file = parts[i]
		default:
			if parts[i] != seg {
				return "", "", fmt.Sprintf("the object does not follow the path convention %s", strings.Join(p.segments, "/"))
			}
		}
	}
	if file == "" || strings.HasSuffix(file, "/") {
		return "", "", "the object is a folder placeholder"
	}
	return collection, file, ""
}

// prefix is the object name prefix of a collection's objects: the
// convention's segments before {file}, filled.
func (p objectPath) prefix(catalogID, collectionID string) string {
	var b strings.Builder
	for _, seg := range p.segments[:len(p.segments)-1] {
		switch seg {
		case "{catalog}":
			seg = catalogID
		case "{collection}":
			seg = collectionID
		}
		b.WriteString(seg + "/")
	}
	return b.String()
}

// assetIDRE is the registry's rule for asset ids.
var assetIDChar = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// assetID is the asset id of a collection's file: "<collection>.<file>" with
// '/' as '.', and other characters the rule refuses as '_'. A name that had
// to change, or is longer than 255, ends with a hash of the original, so
// that two files never share an asset.
func assetID(collection, file string) string {
	raw := collection + "." + strings.ReplaceAll(file, "/", ".")
	id := assetIDChar.ReplaceAllString(raw, "_")
	if id == raw && len(id) <= 255 {
		return id
	}
	sum := sha256.Sum256([]byte(collection + "/" + file))
	return id[:min(len(id), 246)] + "-" + hex.EncodeToString(sum[:])[:8]
}

// Kinds and ingestion formats by file extension.
var (
	vectorFormats = map[string]string{
		".geojson": "geojson", ".json": "geojson",
		".ndjson": "ndjson", ".geojsonl": "ndjson", ".geojsons": "ndjson", ".jsonl": "ndjson",
		".csv": "csv",
		".zip": "gdal", ".shp": "gdal", ".gpkg": "gdal", ".fgb": "gdal", ".kml": "gdal", ".kmz": "gdal",
		".gml": "gdal", ".gpx": "gdal", ".tab": "gdal", ".mif": "gdal", ".sqlite": "gdal",
	}
	rasterExts = map[string]bool{
		".tif": true, ".tiff": true, ".geotiff": true, ".jp2": true, ".img": true, ".nc": true,
		".hdf": true, ".h5": true, ".dem": true, ".asc": true, ".grd": true, ".cog": true,
	}
)

// classify returns the asset kind of a file and, for a vector file, the
// ingestion format that reads it. A Shapefile's sidecar files (.shx, .dbf,
// .prj, .cpg) are "other": the .shp is what gets ingested.
func classify(file string) (kind, format string) {
	ext := strings.ToLower(path.Ext(file))
	if f, ok := vectorFormats[ext]; ok {
		return "vector", f
	}
	if rasterExts[ext] {
		return "raster", ""
	}
	return "other", ""
}
