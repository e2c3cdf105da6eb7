-- wf:database catalog
-- wf schema, version 30: a feature table stores its geometry once.
--
-- Until now every version of a feature kept its geometry twice: as PostGIS
-- geometry (geom) and as a GeoJSON copy in a jsonb column (geometry). The
-- copy made a stored row about three times larger and cost the server a
-- jsonb parse per row on every load. The readers (export, elasticsearch,
-- dwh_join) now read geom's WKB and write the same canonical GeoJSON text
-- from it (both were made from one normalised geometry, so nothing is
-- lost), and this drops the copy from every feature table wf owns. DROP
-- COLUMN changes only the catalog: it is instant, whatever the table's
-- size; the space of the old copies is reused as rows are rewritten (or at
-- once by VACUUM FULL). A table without geom (made before PostGIS, still
-- with geometry_wkb) keeps its copy until CreateFeatureTable upgrades it,
-- which drops it then. Content hashes are unchanged: an unchanged source
-- ingested after the upgrade writes no new version.
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN
        SELECT o.schema_name, o.table_name
        FROM catalog.owned_tables o
        WHERE EXISTS (SELECT 1 FROM pg_attribute a
                      WHERE a.attrelid = to_regclass(format('%I.%I', o.schema_name, o.table_name))
                        AND a.attname = 'geometry' AND NOT a.attisdropped)
          AND EXISTS (SELECT 1 FROM pg_attribute a
                      WHERE a.attrelid = to_regclass(format('%I.%I', o.schema_name, o.table_name))
                        AND a.attname = 'geom' AND NOT a.attisdropped)
        ORDER BY 1, 2
    LOOP
        EXECUTE format('ALTER TABLE %I.%I DROP COLUMN geometry', t.schema_name, t.table_name);
    END LOOP;
END
$$;
