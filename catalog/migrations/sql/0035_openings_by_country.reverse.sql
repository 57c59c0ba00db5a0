-- Frozen: migration 0035, undone.

DROP INDEX IF EXISTS catalog_fleetshape_country_idx;
