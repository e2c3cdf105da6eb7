-- wf:database catalog
-- wf schema, version 14: where each collection's search index stands.
--
-- The elasticsearch task indexes a collection's current features into one
-- index per tenant and collection, sending only the versions written since
-- its last run: watermark is the latest transaction_time (or deleted_at) it
-- has indexed. Feature writes take their transaction_time under the feature
-- table's advisory lock (engine/store MergeFeatures), so they commit in
-- transaction_time order per table and nothing older can appear after a
-- watermark was read. Dropping the collection (or its catalog) deletes the
-- index and its row here.
CREATE TABLE catalog.search_indexes (
    index_name    text         PRIMARY KEY,
    catalog_id    varchar(63)  NOT NULL,
    collection_id varchar(63)  NOT NULL,
    schema_name   varchar(63)  NOT NULL,
    watermark     timestamptz,               -- NULL: nothing indexed yet
    documents     bigint       NOT NULL DEFAULT 0,  -- the index's _count after the last run
    updated_at    timestamptz  NOT NULL DEFAULT now()
);
CREATE INDEX search_indexes_collection ON catalog.search_indexes (catalog_id, collection_id);
