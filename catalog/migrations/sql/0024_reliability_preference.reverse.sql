-- Frozen: migration 0024 undone. The kept tables, their functions and the band walks' indexes as
-- migration 0013 left them (no reliability), made anew and counted again; never today's generators.

DROP TABLE catalog_fleetshape;

DROP TABLE catalog_fleetdelta;

CREATE TABLE catalog_fleetshape (id bigserial PRIMARY KEY, shape text NOT NULL, chunk integer NOT NULL, is_available boolean, provider_is_active boolean, last_seen_at timestamp with time zone, country varchar(2), memory_per_gpu_mib integer, free_gpus smallint, tier varchar(10), prices bigint[] NOT NULL, cum integer[] NOT NULL);

ALTER TABLE catalog_fleetshape ALTER COLUMN prices SET STORAGE PLAIN, ALTER COLUMN cum SET STORAGE PLAIN;

CREATE INDEX catalog_fleetshape_shape_idx ON catalog_fleetshape (shape);

CREATE UNLOGGED TABLE catalog_fleetdelta (txid bigint NOT NULL, shape text NOT NULL, is_available boolean, provider_is_active boolean, last_seen_at timestamp with time zone, country varchar(2), memory_per_gpu_mib integer, free_gpus smallint, tier varchar(10), price bigint NOT NULL, n integer NOT NULL);

CREATE INDEX catalog_fleetdelta_txid_idx ON catalog_fleetdelta (txid);

CREATE OR REPLACE FUNCTION catalog_fleet_track() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO catalog_fleetdelta (txid, shape, is_available, provider_is_active, last_seen_at, country,
            memory_per_gpu_mib, free_gpus, tier, price, n) SELECT txid_current(), d.*
        FROM (SELECT concat_ws('|', quote_nullable(p.is_available), quote_nullable(p.provider_is_active),
                quote_nullable(extract(epoch FROM p.last_seen_at)), quote_nullable(p.country), quote_nullable(p.memory_per_gpu_mib),
                quote_nullable(p.free_gpus), quote_nullable(p.tier)) AS shape, p.is_available, p.provider_is_active,
            p.last_seen_at, p.country, p.memory_per_gpu_mib, p.free_gpus, p.tier, p.price, SUM(p.n)::integer AS n
            FROM (SELECT m.is_available AS is_available,
                CASE WHEN (NOT m.is_available) THEN NULL ELSE m.provider_is_active END AS provider_is_active,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.last_seen_at END AS last_seen_at,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.country END AS country,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.memory_per_gpu_mib END AS memory_per_gpu_mib,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) THEN NULL ELSE m.free_gpus END AS free_gpus,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE m.tier END AS tier,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN 0 ELSE (m.price_per_gpu_hour * 10000)::bigint END AS price,
                m.n
                FROM (SELECT *, 1 AS n
                    FROM fleet_new) AS m
                WHERE NOT (m.gone_at IS NOT NULL)) AS p
            GROUP BY p.is_available, p.provider_is_active, p.last_seen_at, p.country, p.memory_per_gpu_mib,
            p.free_gpus, p.tier, p.price
            HAVING SUM(p.n) <> 0) AS d;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO catalog_fleetdelta (txid, shape, is_available, provider_is_active, last_seen_at, country,
            memory_per_gpu_mib, free_gpus, tier, price, n) SELECT txid_current(), d.*
        FROM (SELECT concat_ws('|', quote_nullable(p.is_available), quote_nullable(p.provider_is_active),
                quote_nullable(extract(epoch FROM p.last_seen_at)), quote_nullable(p.country), quote_nullable(p.memory_per_gpu_mib),
                quote_nullable(p.free_gpus), quote_nullable(p.tier)) AS shape, p.is_available, p.provider_is_active,
            p.last_seen_at, p.country, p.memory_per_gpu_mib, p.free_gpus, p.tier, p.price, SUM(p.n)::integer AS n
            FROM (SELECT m.is_available AS is_available,
                CASE WHEN (NOT m.is_available) THEN NULL ELSE m.provider_is_active END AS provider_is_active,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.last_seen_at END AS last_seen_at,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.country END AS country,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.memory_per_gpu_mib END AS memory_per_gpu_mib,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) THEN NULL ELSE m.free_gpus END AS free_gpus,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE m.tier END AS tier,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN 0 ELSE (m.price_per_gpu_hour * 10000)::bigint END AS price,
                m.n
                FROM (SELECT *, 1 AS n
                    FROM fleet_new
                    UNION ALL SELECT *, -1 AS n
                    FROM fleet_old) AS m
                WHERE NOT (m.gone_at IS NOT NULL)) AS p
            GROUP BY p.is_available, p.provider_is_active, p.last_seen_at, p.country, p.memory_per_gpu_mib,
            p.free_gpus, p.tier, p.price
            HAVING SUM(p.n) <> 0) AS d;
    ELSE
        INSERT INTO catalog_fleetdelta (txid, shape, is_available, provider_is_active, last_seen_at, country,
            memory_per_gpu_mib, free_gpus, tier, price, n) SELECT txid_current(), d.*
        FROM (SELECT concat_ws('|', quote_nullable(p.is_available), quote_nullable(p.provider_is_active),
                quote_nullable(extract(epoch FROM p.last_seen_at)), quote_nullable(p.country), quote_nullable(p.memory_per_gpu_mib),
                quote_nullable(p.free_gpus), quote_nullable(p.tier)) AS shape, p.is_available, p.provider_is_active,
            p.last_seen_at, p.country, p.memory_per_gpu_mib, p.free_gpus, p.tier, p.price, SUM(p.n)::integer AS n
            FROM (SELECT m.is_available AS is_available,
                CASE WHEN (NOT m.is_available) THEN NULL ELSE m.provider_is_active END AS provider_is_active,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.last_seen_at END AS last_seen_at,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.country END AS country,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.memory_per_gpu_mib END AS memory_per_gpu_mib,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) THEN NULL ELSE m.free_gpus END AS free_gpus,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE m.tier END AS tier,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN 0 ELSE (m.price_per_gpu_hour * 10000)::bigint END AS price,
                m.n
                FROM (SELECT *, -1 AS n
                    FROM fleet_old) AS m
                WHERE NOT (m.gone_at IS NOT NULL)) AS p
            GROUP BY p.is_available, p.provider_is_active, p.last_seen_at, p.country, p.memory_per_gpu_mib,
            p.free_gpus, p.tier, p.price
            HAVING SUM(p.n) <> 0) AS d;
    END IF;
    IF FOUND THEN
        INSERT INTO catalog_fleetpending (txid) VALUES (txid_current()) ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $fn$;

CREATE OR REPLACE FUNCTION catalog_fleet_merge() RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
    tx bigint := txid_current_if_assigned();
BEGIN
    IF tx IS NULL THEN
        RETURN;
    END IF;
    DELETE FROM catalog_fleetpending WHERE txid = tx;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(5131334, s.stripe)
    FROM (SELECT DISTINCT abs(hashtext(shape) % 64) AS stripe FROM catalog_fleetdelta WHERE txid = tx) AS s
    ORDER BY s.stripe;
    WITH gone AS (DELETE FROM catalog_fleetdelta WHERE txid = tx RETURNING *),
    d AS (SELECT shape, price, SUM(n) AS n FROM gone GROUP BY shape, price),
    k AS (SELECT DISTINCT ON (shape) shape, is_available, provider_is_active, last_seen_at, country, memory_per_gpu_mib, free_gpus, tier FROM gone ORDER BY shape),
    old AS (DELETE FROM catalog_fleetshape AS s USING k WHERE s.shape = k.shape RETURNING s.shape, s.prices, s.cum)
    INSERT INTO catalog_fleetshape (shape, chunk, is_available, provider_is_active, last_seen_at, country,
        memory_per_gpu_mib, free_gpus, tier, prices, cum) SELECT c.shape, c.chunk, k.is_available, k.provider_is_active,
    k.last_seen_at, k.country, k.memory_per_gpu_mib, k.free_gpus, k.tier, array_agg(c.price ORDER BY c.price),
    array_agg(c.cum ORDER BY c.price)
    FROM (SELECT e.shape, e.chunk, e.price, SUM(e.n) OVER (PARTITION BY e.shape, e.chunk ORDER BY e.price)::integer AS cum
        FROM (SELECT shape, price, n, (row_number() OVER (PARTITION BY shape ORDER BY price) - 1) / 256 AS chunk
            FROM (SELECT shape, price, SUM(n) AS n
                FROM (SELECT o.shape, u.price, u.c - coalesce(o.cum[u.i - 1], 0) AS n
                    FROM old AS o
                    CROSS JOIN LATERAL unnest(o.prices, o.cum) WITH ORDINALITY AS u(price, c, i)
                    UNION ALL SELECT shape, price, n
                    FROM d) AS x
                GROUP BY shape, price
                HAVING SUM(n) <> 0) AS x) AS e) AS c
    JOIN (SELECT *
        FROM k) AS k ON k.shape = c.shape
    GROUP BY c.shape, c.chunk, k.is_available, k.provider_is_active, k.last_seen_at, k.country, k.memory_per_gpu_mib,
    k.free_gpus, k.tier;
END $fn$;

CREATE OR REPLACE FUNCTION catalog_fleet_merge_at_commit() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM catalog_fleet_merge();
    RETURN NULL;
END $fn$;

CREATE OR REPLACE FUNCTION catalog_fleet_rebuild() RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM pg_advisory_xact_lock(5131334, s) FROM generate_series(0, 63) AS s ORDER BY s;
    DELETE FROM catalog_fleetshape;
    INSERT INTO catalog_fleetshape (shape, chunk, is_available, provider_is_active, last_seen_at, country,
        memory_per_gpu_mib, free_gpus, tier, prices, cum) SELECT c.shape, c.chunk, k.is_available, k.provider_is_active,
    k.last_seen_at, k.country, k.memory_per_gpu_mib, k.free_gpus, k.tier, array_agg(c.price ORDER BY c.price),
    array_agg(c.cum ORDER BY c.price)
    FROM (SELECT e.shape, e.chunk, e.price, SUM(e.n) OVER (PARTITION BY e.shape, e.chunk ORDER BY e.price)::integer AS cum
        FROM (SELECT shape, price, n, (row_number() OVER (PARTITION BY shape ORDER BY price) - 1) / 256 AS chunk
            FROM (SELECT shape, price, n
                FROM (SELECT concat_ws('|', quote_nullable(p.is_available), quote_nullable(p.provider_is_active),
                        quote_nullable(extract(epoch FROM p.last_seen_at)), quote_nullable(p.country),
                        quote_nullable(p.memory_per_gpu_mib), quote_nullable(p.free_gpus), quote_nullable(p.tier)) AS shape,
                    p.is_available, p.provider_is_active, p.last_seen_at, p.country, p.memory_per_gpu_mib,
                    p.free_gpus, p.tier, p.price, SUM(p.n)::integer AS n
                    FROM (SELECT m.is_available AS is_available,
                        CASE WHEN (NOT m.is_available) THEN NULL ELSE m.provider_is_active END AS provider_is_active,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.last_seen_at END AS last_seen_at,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.country END AS country,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.memory_per_gpu_mib END AS memory_per_gpu_mib,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) THEN NULL ELSE m.free_gpus END AS free_gpus,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE m.tier END AS tier,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN 0 ELSE (m.price_per_gpu_hour * 10000)::bigint END AS price,
                        m.n
                        FROM (SELECT *, 1 AS n
                            FROM catalog_machine) AS m
                        WHERE NOT (m.gone_at IS NOT NULL)) AS p
                    GROUP BY p.is_available, p.provider_is_active, p.last_seen_at, p.country, p.memory_per_gpu_mib,
                    p.free_gpus, p.tier, p.price
                    HAVING SUM(p.n) <> 0) AS s) AS x) AS e) AS c
    JOIN (SELECT DISTINCT shape, is_available, provider_is_active, last_seen_at, country, memory_per_gpu_mib,
        free_gpus, tier
        FROM (SELECT concat_ws('|', quote_nullable(p.is_available), quote_nullable(p.provider_is_active),
                quote_nullable(extract(epoch FROM p.last_seen_at)), quote_nullable(p.country), quote_nullable(p.memory_per_gpu_mib),
                quote_nullable(p.free_gpus), quote_nullable(p.tier)) AS shape, p.is_available, p.provider_is_active,
            p.last_seen_at, p.country, p.memory_per_gpu_mib, p.free_gpus, p.tier, p.price, SUM(p.n)::integer AS n
            FROM (SELECT m.is_available AS is_available,
                CASE WHEN (NOT m.is_available) THEN NULL ELSE m.provider_is_active END AS provider_is_active,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.last_seen_at END AS last_seen_at,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.country END AS country,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.memory_per_gpu_mib END AS memory_per_gpu_mib,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) THEN NULL ELSE m.free_gpus END AS free_gpus,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE m.tier END AS tier,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN 0 ELSE (m.price_per_gpu_hour * 10000)::bigint END AS price,
                m.n
                FROM (SELECT *, 1 AS n
                    FROM catalog_machine) AS m
                WHERE NOT (m.gone_at IS NOT NULL)) AS p
            GROUP BY p.is_available, p.provider_is_active, p.last_seen_at, p.country, p.memory_per_gpu_mib,
            p.free_gpus, p.tier, p.price
            HAVING SUM(p.n) <> 0) AS s) AS k ON k.shape = c.shape
    GROUP BY c.shape, c.chunk, k.is_available, k.provider_is_active, k.last_seen_at, k.country, k.memory_per_gpu_mib,
    k.free_gpus, k.tier;
END $fn$;

CREATE OR REPLACE FUNCTION catalog_fleet_truncated() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM pg_advisory_xact_lock(5131334, s) FROM generate_series(0, 63) AS s ORDER BY s;
    DELETE FROM catalog_fleetshape;
    DELETE FROM catalog_fleetdelta WHERE txid = txid_current();
    RETURN NULL;
END $fn$;

SELECT catalog_fleet_rebuild();

DROP TABLE catalog_latestspeed;

CREATE TABLE catalog_latestspeed AS SELECT DISTINCT ON (s.machine_id, s.model_slug, s.precision) m.id AS machine_id, s.id AS speed_id, s.model_slug AS model_slug,
s.precision AS precision, s.value AS value, s.gpus AS gpus, s.measured_at AS measured_at, s.engine AS engine,
s.engine_version AS engine_version, s.concurrency AS concurrency, s.input_tokens AS input_tokens, s.output_tokens AS output_tokens,
s.measured_by AS measured_by, s.source AS source, m.gone_at AS gone_at, m.is_available AS is_available,
m.provider_is_active AS provider_is_active, m.last_seen_at AS last_seen_at, m.country AS country, m.memory_per_gpu_mib AS memory_per_gpu_mib,
m.free_gpus AS free_gpus, m.tier AS tier, m.price_per_gpu_hour AS price_per_gpu_hour, m.provider_id AS provider_id,
m.provider_machine_id AS provider_machine_id, m.gpu_type_id AS gpu_type_id, m.region AS region
FROM catalog_measuredspeed s
JOIN catalog_machine m ON m.id = s.machine_id
WHERE s.unit = 'tokens/s' AND s.gpu_type_id + 0 = m.gpu_type_id AND (FALSE)
ORDER BY s.machine_id, s.model_slug, s.precision, s.measured_at DESC, s.value / s.gpus, s.gpus, s.id WITH NO DATA;

ALTER TABLE catalog_latestspeed ADD PRIMARY KEY (model_slug, precision, machine_id);

CREATE INDEX catalog_latestspeed_machine_idx ON catalog_latestspeed (machine_id);

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
            price_per_gpu_hour, provider_id, provider_machine_id, gpu_type_id, region) SELECT DISTINCT ON (s.machine_id,
            s.model_slug, s.precision) m.id AS machine_id, s.id AS speed_id, s.model_slug AS model_slug,
        s.precision AS precision, s.value AS value, s.gpus AS gpus, s.measured_at AS measured_at, s.engine AS engine,
        s.engine_version AS engine_version, s.concurrency AS concurrency, s.input_tokens AS input_tokens,
        s.output_tokens AS output_tokens, s.measured_by AS measured_by, s.source AS source, m.gone_at AS gone_at,
        m.is_available AS is_available, m.provider_is_active AS provider_is_active, m.last_seen_at AS last_seen_at,
        m.country AS country, m.memory_per_gpu_mib AS memory_per_gpu_mib, m.free_gpus AS free_gpus, m.tier AS tier,
        m.price_per_gpu_hour AS price_per_gpu_hour, m.provider_id AS provider_id, m.provider_machine_id AS provider_machine_id,
        m.gpu_type_id AS gpu_type_id, m.region AS region
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
        price_per_gpu_hour, provider_id, provider_machine_id, gpu_type_id, region) SELECT DISTINCT ON (s.machine_id,
        s.model_slug, s.precision) m.id AS machine_id, s.id AS speed_id, s.model_slug AS model_slug, s.precision AS precision,
    s.value AS value, s.gpus AS gpus, s.measured_at AS measured_at, s.engine AS engine, s.engine_version AS engine_version,
    s.concurrency AS concurrency, s.input_tokens AS input_tokens, s.output_tokens AS output_tokens, s.measured_by AS measured_by,
    s.source AS source, m.gone_at AS gone_at, m.is_available AS is_available, m.provider_is_active AS provider_is_active,
    m.last_seen_at AS last_seen_at, m.country AS country, m.memory_per_gpu_mib AS memory_per_gpu_mib,
    m.free_gpus AS free_gpus, m.tier AS tier, m.price_per_gpu_hour AS price_per_gpu_hour, m.provider_id AS provider_id,
    m.provider_machine_id AS provider_machine_id, m.gpu_type_id AS gpu_type_id, m.region AS region
    FROM catalog_measuredspeed s
    JOIN catalog_machine m ON m.id = s.machine_id
    WHERE s.unit = 'tokens/s' AND s.gpu_type_id + 0 = m.gpu_type_id AND (s.machine_id IN (SELECT id
        FROM unnest(ids) AS n(id)))
    ORDER BY s.machine_id, s.model_slug, s.precision, s.measured_at DESC, s.value / s.gpus, s.gpus, s.id;
    RETURN NULL;
END $fn$;

CREATE OR REPLACE FUNCTION catalog_latest_speed_truncated() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    -- Emptied as the machines were: a DELETE would leave every page behind until a VACUUM FULL.
    TRUNCATE catalog_latestspeed;
    RETURN NULL;
END $fn$;

CREATE OR REPLACE FUNCTION catalog_latest_speed_rebuild() RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
    LOCK TABLE catalog_machine, catalog_measuredspeed IN SHARE ROW EXCLUSIVE MODE;
    DELETE FROM catalog_latestspeed;
    INSERT INTO catalog_latestspeed (machine_id, speed_id, model_slug, precision, value, gpus, measured_at,
        engine, engine_version, concurrency, input_tokens, output_tokens, measured_by, source, gone_at,
        is_available, provider_is_active, last_seen_at, country, memory_per_gpu_mib, free_gpus, tier,
        price_per_gpu_hour, provider_id, provider_machine_id, gpu_type_id, region) SELECT DISTINCT ON (s.machine_id,
        s.model_slug, s.precision) m.id AS machine_id, s.id AS speed_id, s.model_slug AS model_slug, s.precision AS precision,
    s.value AS value, s.gpus AS gpus, s.measured_at AS measured_at, s.engine AS engine, s.engine_version AS engine_version,
    s.concurrency AS concurrency, s.input_tokens AS input_tokens, s.output_tokens AS output_tokens, s.measured_by AS measured_by,
    s.source AS source, m.gone_at AS gone_at, m.is_available AS is_available, m.provider_is_active AS provider_is_active,
    m.last_seen_at AS last_seen_at, m.country AS country, m.memory_per_gpu_mib AS memory_per_gpu_mib,
    m.free_gpus AS free_gpus, m.tier AS tier, m.price_per_gpu_hour AS price_per_gpu_hour, m.provider_id AS provider_id,
    m.provider_machine_id AS provider_machine_id, m.gpu_type_id AS gpu_type_id, m.region AS region
    FROM catalog_measuredspeed s
    JOIN catalog_machine m ON m.id = s.machine_id
    WHERE s.unit = 'tokens/s' AND s.gpu_type_id + 0 = m.gpu_type_id AND (TRUE)
    ORDER BY s.machine_id, s.model_slug, s.precision, s.measured_at DESC, s.value / s.gpus, s.gpus, s.id;
END $fn$;

SELECT catalog_latest_speed_rebuild();

DROP INDEX IF EXISTS catalog_machine_offer_cover_idx;

DROP INDEX IF EXISTS catalog_machine_country_price_idx;

CREATE INDEX catalog_machine_offer_cover_idx ON catalog_machine (price_per_gpu_hour) INCLUDE (memory_per_gpu_mib, free_gpus, tier, country, last_seen_at, provider_id, provider_machine_id, id) WHERE gone_at IS NULL AND is_available AND provider_is_active;

CREATE INDEX catalog_machine_country_price_idx ON catalog_machine (country, price_per_gpu_hour) INCLUDE (memory_per_gpu_mib, free_gpus, tier, last_seen_at, provider_id, provider_machine_id, id) WHERE gone_at IS NULL AND is_available AND provider_is_active;
