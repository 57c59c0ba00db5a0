-- Frozen: the SQL migration 0010 runs (reversed), as `catalog/latest_speeds.py uninstall_sql()` generated it at commit e1a9cee.
-- Never edit: a change to the counting engine's SQL goes in a new migration with its own copy.

DROP TRIGGER IF EXISTS catalog_latest_speed_machines_inserted ON catalog_machine;

DROP TRIGGER IF EXISTS catalog_latest_speed_machines_updated ON catalog_machine;

DROP TRIGGER IF EXISTS catalog_latest_speed_machines_deleted ON catalog_machine;

DROP TRIGGER IF EXISTS catalog_latest_speed_machines_truncated ON catalog_machine;

DROP TRIGGER IF EXISTS catalog_latest_speed_speeds_inserted ON catalog_measuredspeed;

DROP TRIGGER IF EXISTS catalog_latest_speed_speeds_updated ON catalog_measuredspeed;

DROP TRIGGER IF EXISTS catalog_latest_speed_speeds_deleted ON catalog_measuredspeed;

DROP TRIGGER IF EXISTS catalog_latest_speed_speeds_truncated ON catalog_measuredspeed;

DROP TABLE IF EXISTS catalog_latestspeed;

DROP FUNCTION IF EXISTS catalog_latest_speed_machines(), catalog_latest_speed_speeds(), catalog_latest_speed_truncated(), catalog_latest_speed_rebuild();
