package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/wfhq/wf/catalog/registry"
	"github.com/wfhq/wf/engine/store"
)

// assetsCommand is `wf catalogs assets`: a catalog's assets, the same
// operations as the HTTP API's /catalogs/{id}/assets.
func assetsCommand() *cli.Command {
	return &cli.Command{
		Name:  "assets",
		Usage: "add, list, show, archive or remove the assets of a catalog",
		Subcommands: []*cli.Command{
			catalogSubcommand("add", "register an asset (emits asset.created)", "CATALOG ASSET", assetsAdd,
				&cli.StringFlag{Name: "uri", Usage: "where the asset is: a `PATH` or URL", Required: true},
				&cli.StringFlag{Name: "collection", Usage: "the `COLLECTION` it feeds"},
				&cli.StringFlag{Name: "kind", Usage: "`KIND`: vector, raster or other", Value: store.AssetOther},
				&cli.StringFlag{Name: "metadata", Usage: "`JSON` object, inline or @FILE"},
				formatFlag(formatText, formatJSON)),
			catalogSubcommand("list", "list the assets of a catalog (active and archived unless --status)", "CATALOG", assetsList,
				&cli.StringSliceFlag{Name: "status", Usage: "only `STATUS` (active, archived, deleted); repeatable"},
				&cli.StringFlag{Name: "collection", Usage: "only the assets of `COLLECTION`"},
				formatFlag(formatText, formatJSON)),
			catalogSubcommand("show", "show one asset with its metadata", "CATALOG ASSET", assetsShow, formatFlag(formatText, formatJSON)),
			catalogSubcommand("archive", "archive an asset (emits asset.archived)", "CATALOG ASSET", assetsArchive),
			catalogSubcommand("remove", "mark an asset deleted; its record stays (emits asset.deleted)", "CATALOG ASSET", assetsRemove),
		},
	}
}

func assetsAdd(c *cli.Context, reg *registry.Registry) error {
	meta, err := jsonObjectFlag(c, "metadata")
	if err != nil {
		return err
	}
	a, err := reg.AddAsset(c.Context, store.NewAsset{
		CatalogID: c.Args().Get(0), ID: c.Args().Get(1), CollectionID: optionalString(c, "collection"),
		URI: c.String("uri"), Kind: c.String("kind"), Metadata: meta,
	})
	return printDone(c, a, err, assetJSON, "added asset %s to catalog %s", a.ID, a.CatalogID)
}

func assetsList(c *cli.Context, reg *registry.Registry) error {
	as, err := reg.ListAssets(c.Context, c.Args().First(),
		store.AssetFilter{Status: c.StringSlice("status"), CollectionID: c.String("collection")}, store.Page{Limit: 1000})
	if err != nil {
		return err
	}
	return printRows(c, as, assetJSON, "ASSET\tKIND\tSTATUS\tCOLLECTION\tURI", func(a store.Asset) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", a.ID, a.Kind, a.Status, deref(a.CollectionID), registry.Shown(a).URI)
	})
}

func assetsShow(c *cli.Context, reg *registry.Registry) error {
	a, err := reg.GetAsset(c.Context, c.Args().Get(0), c.Args().Get(1))
	if err != nil {
		return err
	}
	if c.String("format") == formatJSON {
		return writeJSON(c.App.Writer, assetJSON(a))
	}
	a = registry.Shown(a) // credentials in its URI are not shown
	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "asset:\t%s\ncatalog:\t%s\ncollection:\t%s\nuri:\t%s\nkind:\t%s\nstatus:\t%s\nmetadata:\t%s\nupdated:\t%s\n",
		a.ID, a.CatalogID, deref(a.CollectionID), a.URI, a.Kind, a.Status, orEmptyObject(a.Metadata), a.UpdatedAt.Format("2006-01-02T15:04:05Z07:00"))
	return tw.Flush()
}

func assetsArchive(c *cli.Context, reg *registry.Registry) error {
	archived := store.AssetArchived
	a, err := reg.UpdateAsset(c.Context, c.Args().Get(0), c.Args().Get(1), store.AssetPatch{Status: &archived})
	return printDone(c, a, err, nil, "archived asset %s of catalog %s", a.ID, a.CatalogID)
}

func assetsRemove(c *cli.Context, reg *registry.Registry) error {
	a, err := reg.RemoveAsset(c.Context, c.Args().Get(0), c.Args().Get(1))
	return printDone(c, a, err, nil, "removed asset %s of catalog %s (its record stays, status deleted)", a.ID, a.CatalogID)
}

// assetJSON is an asset as `--format json` prints it (the HTTP API's shape,
// credentials in its URI redacted).
func assetJSON(a store.Asset) map[string]any {
	a = registry.Shown(a)
	return map[string]any{
		"catalog_id": a.CatalogID, "asset_id": a.ID, "collection_id": a.CollectionID, "uri": a.URI, "kind": a.Kind,
		"status": a.Status, "metadata": json.RawMessage(orEmptyObject(a.Metadata)), "created_at": a.CreatedAt, "updated_at": a.UpdatedAt,
	}
}
