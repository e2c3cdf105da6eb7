-- wf:database queue
-- Placeholder for migration 031, which another branch of this release adds:
-- tern refuses a gap in the numbering, so branch flow (migration 033) carries
-- this no-op to load and test. DELETE THIS FILE WHEN MERGING branch flow.
SELECT 1;
