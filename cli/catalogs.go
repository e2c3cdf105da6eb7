package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/catalog/registry"
	"github.com/wfhq/wf/config"
	"github.com/wfhq/wf/engine/events"
	"github.com/wfhq/wf/engine/store"
	"github.com/wfhq/wf/internal/lines"
)

// catalogsCommand is `wf catalogs`: the tenant registry (catalogs and their
// collections), the same operations as the HTTP API's /catalogs.
func catalogsCommand() *cli.Command {
	return &cli.Command{
		Name:  "catalogs",
		Usage: "create, list, show or delete catalogs (tenants), their collections and assets",
		Subcommands: []*cli.Command{
			catalogSubcommand("create", "register a catalog (emits catalog.created)", "ID", catalogsCreate,
				&cli.StringFlag{Name: "schema-name", Usage: "the tenant `SCHEMA` of its tasks (default s_<ID>)"},
				&cli.StringFlag{Name: "title", Usage: "a `TITLE`"},
				&cli.StringFlag{Name: "description", Usage: "a `DESCRIPTION`"},
				&cli.StringFlag{Name: "metadata", Usage: "`JSON` object, inline or @FILE"},
				formatFlag(formatText, formatJSON)),
			catalogSubcommand("list", "list catalogs", "", catalogsList, formatFlag(formatText, formatJSON)),
			catalogSubcommand("show", "show one catalog and its collections", "ID", catalogsShow, formatFlag(formatText, formatJSON)),
			catalogSubcommand("delete", "delete a catalog and its collections (emits catalog.deleted)", "ID", catalogsDelete),
			{
				Name:  "collections",
				Usage: "add, list or remove the collections of a catalog",
				Subcommands: []*cli.Command{
					catalogSubcommand("add", "add a collection (emits collection.created)", "CATALOG COLLECTION", collectionsAdd,
						&cli.StringFlag{Name: "title", Usage: "a `TITLE`"},
						&cli.StringFlag{Name: "layer-config", Usage: "the layer configuration, a `JSON` object inline or @FILE"},
						formatFlag(formatText, formatJSON)),
					catalogSubcommand("list", "list the collections of a catalog", "CATALOG", collectionsList, formatFlag(formatText, formatJSON)),
					catalogSubcommand("remove", "remove a collection (emits collection.deleted)", "CATALOG COLLECTION", collectionsRemove),
				},
			},
			assetsCommand(),
		},
	}
}

// catalogSubcommand is a catalogs command: name, usage, the arguments it
// takes exactly (argsUsage, one word each), what it does and its flags.
func catalogSubcommand(name, usage, argsUsage string, run func(c *cli.Context, reg *registry.Registry) error, flags ...cli.Flag) *cli.Command {
	return &cli.Command{
		Name: name, Usage: usage, ArgsUsage: argsUsage, Flags: flags,
		Action: catalogAction(len(strings.Fields(argsUsage)), run),
	}
}

// catalogAction wraps a catalogs command taking exactly nargs arguments.
func catalogAction(nargs int, run func(c *cli.Context, reg *registry.Registry) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.NArg() != nargs {
			return Usagef("%s takes %d argument(s) (%s), got %d", c.Command.Name, nargs, c.Command.ArgsUsage, c.NArg())
		}
		if c.IsSet("format") {
			if _, err := checkFormat(c, formatText, formatJSON); err != nil {
				return err
			}
		}
		return databaseActionArgs(accessSchema, func(c *cli.Context, cfg *config.Config, pool *pgxpool.Pool) error {
			st, closeCatalog, err := withCatalog(c.Context, cfg, configuredStore(cfg, pool))
			if err != nil {
				return cli.Exit(err.Error(), ExitFailure)
			}
			defer closeCatalog()
			files, err := filesOpener(cfg)
			if err != nil {
				return err
			}
			// The registry writes in the catalog's database, its events go to
			// the queue's (through the outbox when they differ).
			err = run(c, registry.New(st.Catalog(), events.NewEmitter(st)).WithFiles(files))
			if err == nil {
				return nil
			}
			var verr *registry.ValidationError
			if errors.As(err, &verr) {
				return cli.Exit("invalid request:\n"+lines.Indented(verr.Errors), ExitFailure)
			}
			var exit cli.ExitCoder
			var usage usageError
			if errors.As(err, &exit) || errors.As(err, &usage) {
				return err
			}
			return cli.Exit(err.Error(), ExitFailure)
		})(c)
	}
}

// jsonObjectFlag reads a flag holding a JSON object inline or as @FILE.
func jsonObjectFlag(c *cli.Context, name string) (json.RawMessage, error) {
	v := c.String(name)
	if v == "" {
		return nil, nil
	}
	if path, ok := strings.CutPrefix(v, "@"); ok {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, cli.Exit(fmt.Sprintf("error reading --%s: %v", name, err), ExitFailure)
		}
		v = string(b)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(v), &obj); err != nil || obj == nil {
		return nil, Usagef("--%s must be a JSON object (inline or @FILE)", name)
	}
	return json.RawMessage(v), nil
}

// printDone prints what a catalogs command did, from the registry's answer
// to it (v, or its error err, returned as it is): with --format json the
// JSON shape of v (asJSON), else one line (format and args, as Printf). A
// command without --format passes a nil asJSON.
func printDone[T any](c *cli.Context, v T, err error, asJSON func(T) map[string]any, format string, args ...any) error {
	if err != nil {
		return err
	}
	if asJSON != nil && c.String("format") == formatJSON {
		return writeJSON(c.App.Writer, asJSON(v))
	}
	_, err = fmt.Fprintf(c.App.Writer, format+"\n", args...)
	return err
}

// printRows prints a catalogs list: with --format json an array of the
// rows' JSON shapes (asJSON), else a table under header with one line
// (tab-separated columns) per row.
func printRows[T any](c *cli.Context, rows []T, asJSON func(T) map[string]any, header string, line func(T) string) error {
	if c.String("format") == formatJSON {
		return writeJSON(c.App.Writer, mapSlice(rows, asJSON))
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, line(r))
	}
	return tw.Flush()
}

// mapSlice returns f of each element of s.
func mapSlice[T, U any](s []T, f func(T) U) []U {
	out := make([]U, len(s))
	for i, v := range s {
		out[i] = f(v)
	}
	return out
}

// optionalString returns a flag's value, or nil when it was not set.
func optionalString(c *cli.Context, name string) *string {
	if !c.IsSet(name) {
		return nil
	}
	v := c.String(name)
	return &v
}

func catalogsCreate(c *cli.Context, reg *registry.Registry) error {
	meta, err := jsonObjectFlag(c, "metadata")
	if err != nil {
		return err
	}
	cat, err := reg.Create(c.Context, registry.NewCatalog{
		ID: c.Args().First(), SchemaName: c.String("schema-name"), Title: optionalString(c, "title"),
		Description: optionalString(c, "description"), Metadata: meta,
	})
	return printDone(c, cat, err, catalogJSON, "created catalog %s (schema_name %s)", cat.ID, cat.SchemaName)
}

func catalogsList(c *cli.Context, reg *registry.Registry) error {
	var all []store.Catalog
	page := store.Page{Limit: 1000}
	for {
		rows, err := reg.List(c.Context, nil, page)
		if err != nil {
			return err
		}
		all = append(all, rows...)
		if len(rows) < page.Limit {
			break
		}
		page.After = rows[len(rows)-1].ID
	}
	return printRows(c, all, catalogJSON, "CATALOG\tSCHEMA\tTITLE\tCREATED", func(cat store.Catalog) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s", cat.ID, cat.SchemaName, deref(cat.Title), cat.CreatedAt.Format(time.RFC3339))
	})
}

func catalogsShow(c *cli.Context, reg *registry.Registry) error {
	cat, err := reg.Get(c.Context, c.Args().First())
	if err != nil {
		return err
	}
	cols, err := reg.ListCollections(c.Context, cat.ID, store.Page{Limit: 1000})
	if err != nil {
		return err
	}
	if c.String("format") == formatJSON {
		out := catalogJSON(cat)
		out["collections"] = mapSlice(cols, collectionJSON)
		return writeJSON(c.App.Writer, out)
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "catalog_id:\t%s\nschema_name:\t%s\ntitle:\t%s\ndescription:\t%s\nmetadata:\t%s\ncreated:\t%s\n",
		cat.ID, cat.SchemaName, deref(cat.Title), deref(cat.Description), cat.Metadata, cat.CreatedAt.Format(time.RFC3339))
	ids := make([]string, len(cols))
	for i, col := range cols {
		ids[i] = col.ID
	}
	fmt.Fprintf(tw, "collections:\t%s\n", strings.Join(ids, ", "))
	return tw.Flush()
}

func catalogsDelete(c *cli.Context, reg *registry.Registry) error {
	cat, err := reg.Delete(c.Context, c.Args().First())
	return printDone(c, cat, err, nil, "deleted catalog %s (schema_name %s)", cat.ID, cat.SchemaName)
}

func collectionsAdd(c *cli.Context, reg *registry.Registry) error {
	cfg, err := jsonObjectFlag(c, "layer-config")
	if err != nil {
		return err
	}
	col, err := reg.AddCollection(c.Context, registry.NewCollection{
		CatalogID: c.Args().Get(0), ID: c.Args().Get(1), Title: optionalString(c, "title"), LayerConfig: cfg,
	})
	return printDone(c, col, err, collectionJSON, "added collection %s to catalog %s", col.ID, col.CatalogID)
}

func collectionsList(c *cli.Context, reg *registry.Registry) error {
	cols, err := reg.ListCollections(c.Context, c.Args().First(), store.Page{Limit: 1000})
	if err != nil {
		return err
	}
	return printRows(c, cols, collectionJSON, "COLLECTION\tTITLE\tLAYER CONFIG", func(col store.Collection) string {
		return fmt.Sprintf("%s\t%s\t%s", col.ID, deref(col.Title), col.LayerConfig)
	})
}

func collectionsRemove(c *cli.Context, reg *registry.Registry) error {
	col, err := reg.RemoveCollection(c.Context, c.Args().Get(0), c.Args().Get(1))
	return printDone(c, col, err, nil, "removed collection %s from catalog %s", col.ID, col.CatalogID)
}

// catalogJSON is a catalog as `wf catalogs … --format json` prints it (the
// HTTP API's shape).
func catalogJSON(c store.Catalog) map[string]any {
	out := map[string]any{
		"catalog_id": c.ID, "schema_name": c.SchemaName, "metadata": json.RawMessage(orEmptyObject(c.Metadata)),
		"created_at": c.CreatedAt, "updated_at": c.UpdatedAt,
	}
	putIfSet(out, "title", c.Title)
	putIfSet(out, "description", c.Description)
	return out
}

// collectionJSON is a collection as `--format json` prints it.
func collectionJSON(c store.Collection) map[string]any {
	out := map[string]any{
		"catalog_id": c.CatalogID, "collection_id": c.ID, "layer_config": json.RawMessage(orEmptyObject(c.LayerConfig)),
		"created_at": c.CreatedAt, "updated_at": c.UpdatedAt,
	}
	putIfSet(out, "title", c.Title)
	return out
}

// putIfSet sets out[key] to *v unless v is nil: an optional field that the
// HTTP API's shape leaves out when it is not set.
func putIfSet(out map[string]any, key string, v *string) {
	if v != nil {
		out[key] = *v
	}
}

func orEmptyObject(raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return []byte("{}")
	}
	return raw
}
