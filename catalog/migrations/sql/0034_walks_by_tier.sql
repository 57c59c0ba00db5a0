-- Frozen: migration 0034. The default market's band walks also read by tier then price: a walk that keeps
-- one tier of a set of countries reads its own tier's machines in price order and stops at its limit.

CREATE INDEX IF NOT EXISTS catalog_machine_tier_price_idx ON catalog_machine (tier, price_per_gpu_hour) INCLUDE (memory_per_gpu_mib, free_gpus, country, last_seen_at, provider_id, provider_machine_id, id, reliability, gpu_type_id) WHERE gone_at IS NULL AND is_available AND provider_is_active;
