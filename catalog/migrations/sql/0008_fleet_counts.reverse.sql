-- Frozen: the SQL migration 0008 runs (reversed), as `catalog/fleet_counts.py uninstall_sql()` generated it at commit 3555cf1.
-- Never edit: a change to the counting engine's SQL goes in a new migration with its own copy.

DROP TRIGGER IF EXISTS catalog_fleet_inserted ON catalog_machine;

DROP TRIGGER IF EXISTS catalog_fleet_updated ON catalog_machine;

DROP TRIGGER IF EXISTS catalog_fleet_deleted ON catalog_machine;

DROP TRIGGER IF EXISTS catalog_fleet_truncated ON catalog_machine;

DROP TABLE IF EXISTS catalog_fleetpending, catalog_fleetdelta, catalog_fleetshape;

DROP FUNCTION IF EXISTS catalog_fleet_track(), catalog_fleet_merge(), catalog_fleet_merge_at_commit(), catalog_fleet_rebuild(), catalog_fleet_truncated();
