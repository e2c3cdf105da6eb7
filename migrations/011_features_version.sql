-- wf:database catalog
-- wf schema, version 11: a version of each feature table's content.
--
-- features_version changes, in the transaction that writes, whenever a
-- feature table's rows change (a merge that creates or versions features,
-- a purge): a new random UUID, which never repeats, not for a table dropped
-- and made again, nor in another or a restored database sharing a tile
-- cache. Tile caches key their tiles by it: a tile rendered for one version
-- is never served for another. '' is a table never written.
ALTER TABLE catalog.owned_tables ADD COLUMN features_version text NOT NULL DEFAULT '';
