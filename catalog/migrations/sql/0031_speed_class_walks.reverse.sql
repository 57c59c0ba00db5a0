-- Frozen: migration 0031 undone. The walk indexes go, and the latest speeds' functions are made again
-- as migration 0024 left them (no market prices) before the columns go; never today's generators.

DROP INDEX IF EXISTS catalog_latestspeed_walk_idx;

DROP INDEX IF EXISTS catalog_latestspeed_interruptible_walk_idx;

DROP INDEX IF EXISTS catalog_latestspeed_any_walk_idx;

CREATE OR REPLACE FUNCTION catalog_latest_speed_machines() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        DELETE FROM catalog_latestspeed AS k USING (SELECT DISTINCT id
            FROM (SELECT id
                FROM machines_new) AS n) AS a
        WHERE k.machine_id = a.id;
        INSERT INTO catalog_latestspeed (machine_id, speed_id, model_slug, precision, value, gpus, measured_at,
            engine, engine_version, concurrency, input_tokens, output_tokens, measured_by, source, gone_at,
            is_available, provider_is_active, last_seen_at, country, memory_per_gpu_mib, free_gpus, tier,
            reliability, price_per_gpu_hour, provider_id, provider_machine_id, gpu_type_id, region) SELECT DISTINCT ON (s.machine_id,
            s.model_slug, s.precision) m.id AS machine_id, s.id AS speed_id, s.model_slug AS model_slug,
        s.precision AS precision, s.value AS value, s.gpus AS gpus, s.measured_at AS measured_at, s.engine AS engine,
        s.engine_version AS engine_version, s.concurrency AS concurrency, s.input_tokens AS input_tokens,
        s.output_tokens AS output_tokens, s.measured_by AS measured_by, s.source AS source, m.gone_at AS gone_at,
        m.is_available AS is_available, m.provider_is_active AS provider_is_active, m.last_seen_at AS last_seen_at,
        m.country AS country, m.memory_per_gpu_mib AS memory_per_gpu_mib, m.free_gpus AS free_gpus, m.tier AS tier,
        m.reliability AS reliability, m.price_per_gpu_hour AS price_per_gpu_hour, m.provider_id AS provider_id,
        m.provider_machine_id AS provider_machine_id, m.gpu_type_id AS gpu_type_id, m.region AS region
        FROM catalog_measuredspeed s
        JOIN catalog_machine m ON m.id = s.machine_id
        WHERE s.unit = 'tokens/s' AND s.gpu_type_id + 0 = m.gpu_type_id AND (s.machine_id IN (SELECT id
            FROM (SELECT id
                FROM machines_new) AS n))
        ORDER BY s.machine_id, s.model_slug, s.precision, s.measured_at DESC, s.value / s.gpus, s.gpus,
        s.id;
    ELSE
        DELETE FROM catalog_latestspeed AS k USING (SELECT DISTINCT id FROM machines_old) AS a WHERE k.machine_id = a.id;
    END IF;
    RETURN NULL;
END $fn$;

CREATE OR REPLACE FUNCTION catalog_latest_speed_speeds() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    ids bigint[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        ids := ARRAY(SELECT DISTINCT machine_id FROM speeds_new);
    ELSIF TG_OP = 'UPDATE' THEN
        ids := ARRAY(SELECT machine_id FROM speeds_new UNION SELECT machine_id FROM speeds_old);
    ELSE
        ids := ARRAY(SELECT DISTINCT machine_id FROM speeds_old);
    END IF;
    PERFORM 1 FROM catalog_machine AS m JOIN unnest(ids) AS a(id) ON m.id = a.id ORDER BY m.id
    FOR NO KEY UPDATE OF m;
    DELETE FROM catalog_latestspeed AS k USING (SELECT DISTINCT id
        FROM unnest(ids) AS n(id)) AS a
    WHERE k.machine_id = a.id;
    INSERT INTO catalog_latestspeed (machine_id, speed_id, model_slug, precision, value, gpus, measured_at,
        engine, engine_version, concurrency, input_tokens, output_tokens, measured_by, source, gone_at,
        is_available, provider_is_active, last_seen_at, country, memory_per_gpu_mib, free_gpus, tier,
        reliability, price_per_gpu_hour, provider_id, provider_machine_id, gpu_type_id, region) SELECT DISTINCT ON (s.machine_id,
        s.model_slug, s.precision) m.id AS machine_id, s.id AS speed_id, s.model_slug AS model_slug, s.precision AS precision,
    s.value AS value, s.gpus AS gpus, s.measured_at AS measured_at, s.engine AS engine, s.engine_version AS engine_version,
    s.concurrency AS concurrency, s.input_tokens AS input_tokens, s.output_tokens AS output_tokens, s.measured_by AS measured_by,
    s.source AS source, m.gone_at AS gone_at, m.is_available AS is_available, m.provider_is_active AS provider_is_active,
    m.last_seen_at AS last_seen_at, m.country AS country, m.memory_per_gpu_mib AS memory_per_gpu_mib,
    m.free_gpus AS free_gpus, m.tier AS tier, m.reliability AS reliability, m.price_per_gpu_hour AS price_per_gpu_hour,
    m.provider_id AS provider_id, m.provider_machine_id AS provider_machine_id, m.gpu_type_id AS gpu_type_id,
    m.region AS region
    FROM catalog_measuredspeed s
    JOIN catalog_machine m ON m.id = s.machine_id
    WHERE s.unit = 'tokens/s' AND s.gpu_type_id + 0 = m.gpu_type_id AND (s.machine_id IN (SELECT id
        FROM unnest(ids) AS n(id)))
    ORDER BY s.machine_id, s.model_slug, s.precision, s.measured_at DESC, s.value / s.gpus, s.gpus, s.id;
    RETURN NULL;
END $fn$;

CREATE OR REPLACE FUNCTION catalog_latest_speed_rebuild() RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
    LOCK TABLE catalog_machine, catalog_measuredspeed IN SHARE ROW EXCLUSIVE MODE;
    DELETE FROM catalog_latestspeed;
    INSERT INTO catalog_latestspeed (machine_id, speed_id, model_slug, precision, value, gpus, measured_at,
        engine, engine_version, concurrency, input_tokens, output_tokens, measured_by, source, gone_at,
        is_available, provider_is_active, last_seen_at, country, memory_per_gpu_mib, free_gpus, tier,
        reliability, price_per_gpu_hour, provider_id, provider_machine_id, gpu_type_id, region) SELECT DISTINCT ON (s.machine_id,
        s.model_slug, s.precision) m.id AS machine_id, s.id AS speed_id, s.model_slug AS model_slug, s.precision AS precision,
    s.value AS value, s.gpus AS gpus, s.measured_at AS measured_at, s.engine AS engine, s.engine_version AS engine_version,
    s.concurrency AS concurrency, s.input_tokens AS input_tokens, s.output_tokens AS output_tokens, s.measured_by AS measured_by,
    s.source AS source, m.gone_at AS gone_at, m.is_available AS is_available, m.provider_is_active AS provider_is_active,
    m.last_seen_at AS last_seen_at, m.country AS country, m.memory_per_gpu_mib AS memory_per_gpu_mib,
    m.free_gpus AS free_gpus, m.tier AS tier, m.reliability AS reliability, m.price_per_gpu_hour AS price_per_gpu_hour,
    m.provider_id AS provider_id, m.provider_machine_id AS provider_machine_id, m.gpu_type_id AS gpu_type_id,
    m.region AS region
    FROM catalog_measuredspeed s
    JOIN catalog_machine m ON m.id = s.machine_id
    WHERE s.unit = 'tokens/s' AND s.gpu_type_id + 0 = m.gpu_type_id AND (TRUE)
    ORDER BY s.machine_id, s.model_slug, s.precision, s.measured_at DESC, s.value / s.gpus, s.gpus, s.id;
END $fn$;

ALTER TABLE catalog_latestspeed DROP COLUMN interruptible_allowed_price, DROP COLUMN any_market_price;
