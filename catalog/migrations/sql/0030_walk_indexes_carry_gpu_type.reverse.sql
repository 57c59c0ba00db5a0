-- Frozen: migration 0030 undone: the band walks' indexes as migration 0026 left them.

DROP INDEX IF EXISTS catalog_machine_offer_cover_idx;

CREATE INDEX catalog_machine_offer_cover_idx ON catalog_machine (price_per_gpu_hour) INCLUDE (memory_per_gpu_mib, free_gpus, tier, country, last_seen_at, provider_id, provider_machine_id, id, reliability) WHERE gone_at IS NULL AND is_available AND provider_is_active;

DROP INDEX IF EXISTS catalog_machine_country_price_idx;

CREATE INDEX catalog_machine_country_price_idx ON catalog_machine (country, price_per_gpu_hour) INCLUDE (memory_per_gpu_mib, free_gpus, tier, last_seen_at, provider_id, provider_machine_id, id, reliability) WHERE gone_at IS NULL AND is_available AND provider_is_active;

DROP INDEX IF EXISTS catalog_machine_interruptible_offer_cover_idx;

CREATE INDEX catalog_machine_interruptible_offer_cover_idx ON catalog_machine (interruptible_allowed_price) INCLUDE (memory_per_gpu_mib, free_gpus, tier, country, last_seen_at, provider_id, provider_machine_id, id, reliability) WHERE gone_at IS NULL AND is_available AND provider_is_active;

DROP INDEX IF EXISTS catalog_machine_interruptible_country_price_idx;

CREATE INDEX catalog_machine_interruptible_country_price_idx ON catalog_machine (country, interruptible_allowed_price) INCLUDE (memory_per_gpu_mib, free_gpus, tier, last_seen_at, provider_id, provider_machine_id, id, reliability) WHERE gone_at IS NULL AND is_available AND provider_is_active;

DROP INDEX IF EXISTS catalog_machine_any_offer_cover_idx;

CREATE INDEX catalog_machine_any_offer_cover_idx ON catalog_machine (any_market_price) INCLUDE (memory_per_gpu_mib, free_gpus, tier, country, last_seen_at, provider_id, provider_machine_id, id, reliability) WHERE gone_at IS NULL AND is_available AND provider_is_active;

DROP INDEX IF EXISTS catalog_machine_any_country_price_idx;

CREATE INDEX catalog_machine_any_country_price_idx ON catalog_machine (country, any_market_price) INCLUDE (memory_per_gpu_mib, free_gpus, tier, last_seen_at, provider_id, provider_machine_id, id, reliability) WHERE gone_at IS NULL AND is_available AND provider_is_active;
