package config

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Elasticsearch is the cluster (Elasticsearch 8, or OpenSearch with its
// compatibility) that the elasticsearch task indexes collections into.
type Elasticsearch struct {
	// Addresses are the nodes' URLs, such as https://es.internal:9200. Empty:
	// the elasticsearch task completes at once with nothing indexed and says
	// so in its outputs.
	Addresses []string `yaml:"addresses"`
	// Username and Password authenticate with HTTP basic auth. Secret:
	// Masked hides Password.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// APIKey is a base64 API key; it wins over Username and Password.
	// Secret: Masked hides it.
	APIKey string `yaml:"api_key"`
	// IndexTemplate names a collection's index: {schema} is the tenant's
	// schema name and {collection} the collection id; both are required, so
	// that every tenant and collection has an index of its own.
	IndexTemplate string `yaml:"index_template"`
	// FlushBytes is the size of one _bulk request.
	FlushBytes int `yaml:"flush_bytes"`
	// Workers is how many _bulk requests one task sends at once.
	Workers int `yaml:"workers"`
	// MaxRetries is how many times a _bulk request, or an item of it,
	// answered 429 or 5xx is retried, with exponential backoff.
	MaxRetries int `yaml:"max_retries"`
}

// DefaultIndexTemplate is Elasticsearch.IndexTemplate's default.
const DefaultIndexTemplate = "wf-{schema}-{collection}"

// indexTemplateRE is what an index template may hold besides its
// placeholders: what Elasticsearch allows in an index name, lower case.
var indexTemplateRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// CheckIndexTemplate returns what is wrong with an index template, or "".
func CheckIndexTemplate(tpl string) string {
	if !strings.Contains(tpl, "{schema}") || !strings.Contains(tpl, "{collection}") {
		return fmt.Sprintf("must contain {schema} and {collection}, so that every tenant and collection has an index of its own; got %q", tpl)
	}
	// Placeholders stand for names of lower-case letters, digits, '_' and '-'.
	literal := strings.NewReplacer("{schema}", "s", "{collection}", "c").Replace(tpl)
	if !indexTemplateRE.MatchString(literal) || len(literal) > 100 {
		return fmt.Sprintf("must be lower-case letters, digits, '.', '_' and '-' around {schema} and {collection}, starting with a letter or digit, at most 100 characters; got %q", tpl)
	}
	return ""
}

// validateElasticsearch checks the elasticsearch section.
func (c *Config) validateElasticsearch(add func(field, format string, args ...any)) {
	e := c.Elasticsearch
	for i, a := range e.Addresses {
		u, err := url.Parse(a)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add(fmt.Sprintf("elasticsearch.addresses[%d]", i), "expected an http(s) URL such as https://es.internal:9200, got %q", a)
		}
	}
	if msg := CheckIndexTemplate(e.IndexTemplate); msg != "" {
		add("elasticsearch.index_template", "%s", msg)
	}
	if e.FlushBytes < 1024 || e.FlushBytes > 100<<20 {
		add("elasticsearch.flush_bytes", "must be from 1024 to 104857600, got %d", e.FlushBytes)
	}
	if e.Workers < 1 || e.Workers > 64 {
		add("elasticsearch.workers", "must be from 1 to 64, got %d", e.Workers)
	}
	if e.MaxRetries < 0 || e.MaxRetries > 20 {
		add("elasticsearch.max_retries", "must be from 0 to 20, got %d", e.MaxRetries)
	}
}

// Warehouse declares the data warehouses that dwh_join may read.
type Warehouse struct {
	// Connections are the declared warehouses. WF_WAREHOUSE_CONNECTIONS
	// takes them as a JSON array.
	Connections []WarehouseConnection `yaml:"connections"`
}

// Warehouse types.
const (
	WarehousePostgres = "postgres"
	WarehouseBigQuery = "bigquery"
)

// WarehouseConnection is one declared warehouse and what each tenant may
// read in it: a task of a catalog not in Catalogs, or naming a table not
// in Tables, fails without connecting.
type WarehouseConnection struct {
	// Name is what a dwh_join task's "connection" input names.
	Name string `yaml:"name" json:"name"`
	// Type is postgres or bigquery.
	Type string `yaml:"type" json:"type"`
	// URL is a PostgreSQL connection string (postgres only). Secret:
	// Masked hides its password.
	URL string `yaml:"url,omitempty" json:"url,omitempty"`
	// Project is the Google Cloud project that runs the queries (bigquery only).
	Project string `yaml:"project,omitempty" json:"project,omitempty"`
	// Endpoint replaces the BigQuery API's address (bigquery only; for an
	// emulator or a private endpoint). Empty: Google's, with Application
	// Default Credentials.
	Endpoint string `yaml:"endpoint,omitempty" json:"endpoint,omitempty"`
	// Catalogs are the catalogs whose tasks may use the connection; "*"
	// means every catalog.
	Catalogs []string `yaml:"catalogs" json:"catalogs"`
	// Tables are the tables those tasks may read: schema.table (postgres)
	// or dataset.table (bigquery); "schema.*" allows a whole schema or
	// dataset.
	Tables []string `yaml:"tables" json:"tables"`
}

// Allows reports whether a catalog's task may read table through c.
func (c WarehouseConnection) Allows(catalogID, table string) bool {
	okCatalog := false
	for _, id := range c.Catalogs {
		if id == "*" || id == catalogID {
			okCatalog = true
		}
	}
	if !okCatalog {
		return false
	}
	prefix, _, _ := strings.Cut(table, ".")
	for _, t := range c.Tables {
		if t == table || t == prefix+".*" {
			return true
		}
	}
	return false
}

// warehouseTableRE is a table name a connection may list: schema.table
// or dataset.table, each part a plain identifier, or schema.*. The parts'
// lengths (at most 128 and 1,001 bytes) are checked apart by
// validWarehouseTable: as counted repetitions they made a program of
// ~1,100 instructions, kept by every wf process.
var warehouseTableRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_$-]*)\.(\*|[A-Za-z_][A-Za-z0-9_$-]*)$`)

// validWarehouseTable reports whether t is a table name a connection may list.
func validWarehouseTable(t string) bool {
	m := warehouseTableRE.FindStringSubmatch(t)
	return m != nil && len(m[1]) <= 128 && len(m[2]) <= 1001
}

// validateWarehouse checks the declared connections.
func (c *Config) validateWarehouse(add func(field, format string, args ...any)) {
	seen := map[string]int{}
	for i, w := range c.Warehouse.Connections {
		p := fmt.Sprintf("warehouse.connections[%d]", i)
		uniqueName(add, "warehouse.connections", i, "name", w.Name, seen)
		switch w.Type {
		case WarehousePostgres:
			if w.URL == "" {
				add(p+".url", "required for a postgres connection")
			} else if msg := checkDatabaseURL(w.URL); msg != "" {
				add(p+".url", "%s", msg)
			}
			if w.Project != "" || w.Endpoint != "" {
				add(p, "project and endpoint are for bigquery connections")
			}
		case WarehouseBigQuery:
			if w.Project == "" {
				add(p+".project", "required for a bigquery connection")
			}
			if w.URL != "" {
				add(p+".url", "is for postgres connections; a bigquery one names its project")
			}
			if w.Endpoint != "" {
				if u, err := url.Parse(w.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					add(p+".endpoint", "expected an http(s) URL, got %q", w.Endpoint)
				}
			}
		default:
			add(p+".type", "expected one of postgres, bigquery, got %q", w.Type)
		}
		if len(w.Catalogs) == 0 {
			add(p+".catalogs", `must name the catalogs that may use the connection (or "*" for all)`)
		}
		if len(w.Tables) == 0 {
			add(p+".tables", "must name the tables the connection may read (schema.table, dataset.table or schema.*)")
		}
		for k, t := range w.Tables {
			if !validWarehouseTable(t) {
				add(fmt.Sprintf("%s.tables[%d]", p, k), "expected schema.table, dataset.table or schema.*, got %q", t)
			}
		}
	}
}
