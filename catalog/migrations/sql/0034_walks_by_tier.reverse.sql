-- Frozen: migration 0034, undone.

DROP INDEX IF EXISTS catalog_machine_tier_price_idx;
