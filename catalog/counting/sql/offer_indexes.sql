-- The SQL of the band walks' indexes, as `catalog/counting/indexes.py` generates it.
-- Written by `manage.py counting_sql --write`; a test fails when it differs from the generator.
-- Installed by the migrations' frozen copies (catalog/migrations/sql/), never from this file.

CREATE INDEX catalog_machine_offer_cover_idx ON catalog_machine (price_per_gpu_hour) INCLUDE (memory_per_gpu_mib, free_gpus, tier, country, last_seen_at, provider_id, provider_machine_id, id, reliability, gpu_type_id) WHERE gone_at IS NULL AND is_available AND provider_is_active;

CREATE INDEX catalog_machine_country_price_idx ON catalog_machine (country, price_per_gpu_hour) INCLUDE (memory_per_gpu_mib, free_gpus, tier, last_seen_at, provider_id, provider_machine_id, id, reliability, gpu_type_id) WHERE gone_at IS NULL AND is_available AND provider_is_active;

CREATE INDEX catalog_machine_tier_price_idx ON catalog_machine (tier, price_per_gpu_hour) INCLUDE (memory_per_gpu_mib, free_gpus, country, last_seen_at, provider_id, provider_machine_id, id, reliability, gpu_type_id) WHERE gone_at IS NULL AND is_available AND provider_is_active;

CREATE INDEX catalog_machine_interruptible_offer_cover_idx ON catalog_machine (interruptible_allowed_price) INCLUDE (memory_per_gpu_mib, free_gpus, tier, country, last_seen_at, provider_id, provider_machine_id, id, reliability, gpu_type_id) WHERE gone_at IS NULL AND is_available AND provider_is_active;

CREATE INDEX catalog_machine_interruptible_country_price_idx ON catalog_machine (country, interruptible_allowed_price) INCLUDE (memory_per_gpu_mib, free_gpus, tier, last_seen_at, provider_id, provider_machine_id, id, reliability, gpu_type_id) WHERE gone_at IS NULL AND is_available AND provider_is_active;

CREATE INDEX catalog_machine_any_offer_cover_idx ON catalog_machine (any_market_price) INCLUDE (memory_per_gpu_mib, free_gpus, tier, country, last_seen_at, provider_id, provider_machine_id, id, reliability, gpu_type_id) WHERE gone_at IS NULL AND is_available AND provider_is_active;

CREATE INDEX catalog_machine_any_country_price_idx ON catalog_machine (country, any_market_price) INCLUDE (memory_per_gpu_mib, free_gpus, tier, last_seen_at, provider_id, provider_machine_id, id, reliability, gpu_type_id) WHERE gone_at IS NULL AND is_available AND provider_is_active;
