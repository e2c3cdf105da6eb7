-- wf:database catalog
-- wf schema, version 8: the assets registry of the catalog application.
--
-- An asset is one file or object a catalog knows about (a source ingested
-- into a collection, a raster, a document): its URI, its kind, its status
-- and what was learnt about it (metadata: the gdal task's driver, CRS,
-- extent, layers or bands). Ingestion records its source here. Assets are
-- never removed by the API: deleting one sets its status, so that feature
-- versions that name it keep a meaning; a deleted catalog takes its assets
-- with it.
CREATE TABLE catalog.assets (
    catalog_id    varchar(63)  NOT NULL REFERENCES catalog.catalogs (catalog_id) ON DELETE CASCADE,
    asset_id      varchar(255) NOT NULL CHECK (asset_id ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$'),
    collection_id varchar(63),  -- the collection it feeds, when it feeds one
    uri           text         NOT NULL CHECK (uri <> ''),
    kind          varchar(10)  NOT NULL DEFAULT 'other' CHECK (kind IN ('vector', 'raster', 'other')),
    status        varchar(10)  NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived', 'deleted')),
    metadata      jsonb        NOT NULL DEFAULT '{}',
    created_at    timestamptz  NOT NULL DEFAULT now(),
    updated_at    timestamptz  NOT NULL DEFAULT now(),
    PRIMARY KEY (catalog_id, asset_id)
);
