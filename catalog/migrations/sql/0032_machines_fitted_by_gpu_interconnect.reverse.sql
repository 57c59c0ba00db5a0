-- Frozen: migration 0032 undone. The fleet shapes are made and counted again as migration 0029 left them
-- (the kind of GPU as the MoE kernel's place alone, in column moe_kernel), and the GPU types' trigger
-- function compares kernels again.

DROP TABLE catalog_fleetshape;

DROP TABLE catalog_fleetdelta;

CREATE TABLE catalog_fleetshape (id bigserial, shape text NOT NULL, chunk integer NOT NULL, is_available boolean, provider_is_active boolean, last_seen_at timestamp with time zone, country varchar(2), memory_per_gpu_mib integer, free_gpus smallint, tier varchar(10), reliability numeric(3,2), moe_kernel smallint, market varchar(13), prices bigint[] NOT NULL, cum integer[] NOT NULL, PRIMARY KEY (id, market)) PARTITION BY LIST (market);

CREATE TABLE catalog_fleetshape_on_demand PARTITION OF catalog_fleetshape FOR VALUES IN ('on_demand');

CREATE TABLE catalog_fleetshape_interruptible PARTITION OF catalog_fleetshape FOR VALUES IN ('interruptible');

CREATE TABLE catalog_fleetshape_any PARTITION OF catalog_fleetshape FOR VALUES IN ('any');

ALTER TABLE catalog_fleetshape ALTER COLUMN prices SET STORAGE PLAIN, ALTER COLUMN cum SET STORAGE PLAIN;

CREATE INDEX catalog_fleetshape_shape_idx ON catalog_fleetshape (shape);

CREATE UNLOGGED TABLE catalog_fleetdelta (txid bigint NOT NULL, shape text NOT NULL, is_available boolean, provider_is_active boolean, last_seen_at timestamp with time zone, country varchar(2), memory_per_gpu_mib integer, free_gpus smallint, tier varchar(10), reliability numeric(3,2), moe_kernel smallint, market varchar(13), price bigint NOT NULL, n integer NOT NULL);

CREATE INDEX catalog_fleetdelta_txid_idx ON catalog_fleetdelta (txid);

CREATE OR REPLACE FUNCTION catalog_fleet_track() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO catalog_fleetdelta (txid, shape, is_available, provider_is_active, last_seen_at, country,
            memory_per_gpu_mib, free_gpus, tier, reliability, moe_kernel, market, price, n) SELECT txid_current(),
        d.*
        FROM (SELECT concat_ws('|', quote_nullable(p.is_available), quote_nullable(p.provider_is_active),
                quote_nullable(extract(epoch FROM p.last_seen_at)), quote_nullable(p.country), quote_nullable(p.memory_per_gpu_mib),
                quote_nullable(p.free_gpus), quote_nullable(p.tier), quote_nullable(p.reliability), quote_nullable(p.moe_kernel),
                quote_nullable(p.market)) AS shape, p.is_available, p.provider_is_active, p.last_seen_at,
            p.country, p.memory_per_gpu_mib, p.free_gpus, p.tier, p.reliability, p.moe_kernel, p.market,
            p.price, SUM(p.n)::integer AS n
            FROM (SELECT m.is_available AS is_available,
                CASE WHEN (NOT m.is_available) THEN NULL ELSE m.provider_is_active END AS provider_is_active,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.last_seen_at END AS last_seen_at,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.country END AS country,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.memory_per_gpu_mib END AS memory_per_gpu_mib,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) THEN NULL ELSE m.free_gpus END AS free_gpus,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE m.tier END AS tier,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE (floor(m.reliability * 100) / 100)::numeric(3,2) END AS reliability,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE (SELECT CASE WHEN g.architecture IN ('cdna2',
                        'cdna3') AND btrim(g.compute_capability) !~ '^[0-9]{1,2}\.[0-9]$' THEN 2 WHEN g.architecture = 'blackwell' AND btrim(g.compute_capability) IN ('10.0',
                        '10.1', '10.2', '10.3', '10.4', '10.5', '10.6', '10.7', '10.8', '10.9') THEN 1 ELSE 0 END
                    FROM catalog_gputype g
                    WHERE g.id = m.gpu_type_id) END AS moe_kernel,
                k.market AS market,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN 0 ELSE (CASE k.market WHEN 'on_demand' THEN m.price_per_gpu_hour WHEN 'interruptible' THEN m.interruptible_allowed_price WHEN 'any' THEN m.any_market_price END * 10000)::bigint END AS price,
                m.n
                FROM (SELECT *, 1 AS n
                    FROM fleet_new) AS m
                CROSS JOIN (VALUES ('on_demand'), ('interruptible'), ('any')) AS k(market)
                WHERE NOT (m.gone_at IS NOT NULL)) AS p
            GROUP BY p.is_available, p.provider_is_active, p.last_seen_at, p.country, p.memory_per_gpu_mib,
            p.free_gpus, p.tier, p.reliability, p.moe_kernel, p.market, p.price
            HAVING SUM(p.n) <> 0) AS d;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO catalog_fleetdelta (txid, shape, is_available, provider_is_active, last_seen_at, country,
            memory_per_gpu_mib, free_gpus, tier, reliability, moe_kernel, market, price, n) SELECT txid_current(),
        d.*
        FROM (SELECT concat_ws('|', quote_nullable(p.is_available), quote_nullable(p.provider_is_active),
                quote_nullable(extract(epoch FROM p.last_seen_at)), quote_nullable(p.country), quote_nullable(p.memory_per_gpu_mib),
                quote_nullable(p.free_gpus), quote_nullable(p.tier), quote_nullable(p.reliability), quote_nullable(p.moe_kernel),
                quote_nullable(p.market)) AS shape, p.is_available, p.provider_is_active, p.last_seen_at,
            p.country, p.memory_per_gpu_mib, p.free_gpus, p.tier, p.reliability, p.moe_kernel, p.market,
            p.price, SUM(p.n)::integer AS n
            FROM (SELECT m.is_available AS is_available,
                CASE WHEN (NOT m.is_available) THEN NULL ELSE m.provider_is_active END AS provider_is_active,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.last_seen_at END AS last_seen_at,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.country END AS country,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.memory_per_gpu_mib END AS memory_per_gpu_mib,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) THEN NULL ELSE m.free_gpus END AS free_gpus,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE m.tier END AS tier,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE (floor(m.reliability * 100) / 100)::numeric(3,2) END AS reliability,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE (SELECT CASE WHEN g.architecture IN ('cdna2',
                        'cdna3') AND btrim(g.compute_capability) !~ '^[0-9]{1,2}\.[0-9]$' THEN 2 WHEN g.architecture = 'blackwell' AND btrim(g.compute_capability) IN ('10.0',
                        '10.1', '10.2', '10.3', '10.4', '10.5', '10.6', '10.7', '10.8', '10.9') THEN 1 ELSE 0 END
                    FROM catalog_gputype g
                    WHERE g.id = m.gpu_type_id) END AS moe_kernel,
                k.market AS market,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN 0 ELSE (CASE k.market WHEN 'on_demand' THEN m.price_per_gpu_hour WHEN 'interruptible' THEN m.interruptible_allowed_price WHEN 'any' THEN m.any_market_price END * 10000)::bigint END AS price,
                m.n
                FROM (SELECT *, 1 AS n
                    FROM fleet_new
                    UNION ALL SELECT *, -1 AS n
                    FROM fleet_old) AS m
                CROSS JOIN (VALUES ('on_demand'), ('interruptible'), ('any')) AS k(market)
                WHERE NOT (m.gone_at IS NOT NULL)) AS p
            GROUP BY p.is_available, p.provider_is_active, p.last_seen_at, p.country, p.memory_per_gpu_mib,
            p.free_gpus, p.tier, p.reliability, p.moe_kernel, p.market, p.price
            HAVING SUM(p.n) <> 0) AS d;
    ELSE
        INSERT INTO catalog_fleetdelta (txid, shape, is_available, provider_is_active, last_seen_at, country,
            memory_per_gpu_mib, free_gpus, tier, reliability, moe_kernel, market, price, n) SELECT txid_current(),
        d.*
        FROM (SELECT concat_ws('|', quote_nullable(p.is_available), quote_nullable(p.provider_is_active),
                quote_nullable(extract(epoch FROM p.last_seen_at)), quote_nullable(p.country), quote_nullable(p.memory_per_gpu_mib),
                quote_nullable(p.free_gpus), quote_nullable(p.tier), quote_nullable(p.reliability), quote_nullable(p.moe_kernel),
                quote_nullable(p.market)) AS shape, p.is_available, p.provider_is_active, p.last_seen_at,
            p.country, p.memory_per_gpu_mib, p.free_gpus, p.tier, p.reliability, p.moe_kernel, p.market,
            p.price, SUM(p.n)::integer AS n
            FROM (SELECT m.is_available AS is_available,
                CASE WHEN (NOT m.is_available) THEN NULL ELSE m.provider_is_active END AS provider_is_active,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.last_seen_at END AS last_seen_at,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.country END AS country,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.memory_per_gpu_mib END AS memory_per_gpu_mib,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) THEN NULL ELSE m.free_gpus END AS free_gpus,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE m.tier END AS tier,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE (floor(m.reliability * 100) / 100)::numeric(3,2) END AS reliability,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE (SELECT CASE WHEN g.architecture IN ('cdna2',
                        'cdna3') AND btrim(g.compute_capability) !~ '^[0-9]{1,2}\.[0-9]$' THEN 2 WHEN g.architecture = 'blackwell' AND btrim(g.compute_capability) IN ('10.0',
                        '10.1', '10.2', '10.3', '10.4', '10.5', '10.6', '10.7', '10.8', '10.9') THEN 1 ELSE 0 END
                    FROM catalog_gputype g
                    WHERE g.id = m.gpu_type_id) END AS moe_kernel,
                k.market AS market,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN 0 ELSE (CASE k.market WHEN 'on_demand' THEN m.price_per_gpu_hour WHEN 'interruptible' THEN m.interruptible_allowed_price WHEN 'any' THEN m.any_market_price END * 10000)::bigint END AS price,
                m.n
                FROM (SELECT *, -1 AS n
                    FROM fleet_old) AS m
                CROSS JOIN (VALUES ('on_demand'), ('interruptible'), ('any')) AS k(market)
                WHERE NOT (m.gone_at IS NOT NULL)) AS p
            GROUP BY p.is_available, p.provider_is_active, p.last_seen_at, p.country, p.memory_per_gpu_mib,
            p.free_gpus, p.tier, p.reliability, p.moe_kernel, p.market, p.price
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
    k AS (SELECT DISTINCT ON (shape) shape, is_available, provider_is_active, last_seen_at, country, memory_per_gpu_mib, free_gpus, tier, reliability, moe_kernel, market FROM gone ORDER BY shape),
    old AS (DELETE FROM catalog_fleetshape AS s USING k WHERE s.shape = k.shape RETURNING s.shape, s.prices, s.cum)
    INSERT INTO catalog_fleetshape (shape, chunk, is_available, provider_is_active, last_seen_at, country,
        memory_per_gpu_mib, free_gpus, tier, reliability, moe_kernel, market, prices, cum) SELECT c.shape,
    c.chunk, k.is_available, k.provider_is_active, k.last_seen_at, k.country, k.memory_per_gpu_mib, k.free_gpus,
    k.tier, k.reliability, k.moe_kernel, k.market, array_agg(c.price ORDER BY c.price), array_agg(c.cum ORDER BY c.price)
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
    k.free_gpus, k.tier, k.reliability, k.moe_kernel, k.market;
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
        memory_per_gpu_mib, free_gpus, tier, reliability, moe_kernel, market, prices, cum) SELECT c.shape,
    c.chunk, k.is_available, k.provider_is_active, k.last_seen_at, k.country, k.memory_per_gpu_mib, k.free_gpus,
    k.tier, k.reliability, k.moe_kernel, k.market, array_agg(c.price ORDER BY c.price), array_agg(c.cum ORDER BY c.price)
    FROM (SELECT e.shape, e.chunk, e.price, SUM(e.n) OVER (PARTITION BY e.shape, e.chunk ORDER BY e.price)::integer AS cum
        FROM (SELECT shape, price, n, (row_number() OVER (PARTITION BY shape ORDER BY price) - 1) / 256 AS chunk
            FROM (SELECT shape, price, n
                FROM (SELECT concat_ws('|', quote_nullable(p.is_available), quote_nullable(p.provider_is_active),
                        quote_nullable(extract(epoch FROM p.last_seen_at)), quote_nullable(p.country),
                        quote_nullable(p.memory_per_gpu_mib), quote_nullable(p.free_gpus), quote_nullable(p.tier),
                        quote_nullable(p.reliability), quote_nullable(p.moe_kernel), quote_nullable(p.market)) AS shape,
                    p.is_available, p.provider_is_active, p.last_seen_at, p.country, p.memory_per_gpu_mib,
                    p.free_gpus, p.tier, p.reliability, p.moe_kernel, p.market, p.price, SUM(p.n)::integer AS n
                    FROM (SELECT m.is_available AS is_available,
                        CASE WHEN (NOT m.is_available) THEN NULL ELSE m.provider_is_active END AS provider_is_active,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.last_seen_at END AS last_seen_at,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.country END AS country,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.memory_per_gpu_mib END AS memory_per_gpu_mib,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) THEN NULL ELSE m.free_gpus END AS free_gpus,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE m.tier END AS tier,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE (floor(m.reliability * 100) / 100)::numeric(3,2) END AS reliability,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE (SELECT CASE WHEN g.architecture IN ('cdna2',
                                'cdna3') AND btrim(g.compute_capability) !~ '^[0-9]{1,2}\.[0-9]$' THEN 2 WHEN g.architecture = 'blackwell' AND btrim(g.compute_capability) IN ('10.0',
                                '10.1', '10.2', '10.3', '10.4', '10.5', '10.6', '10.7', '10.8', '10.9') THEN 1 ELSE 0 END
                            FROM catalog_gputype g
                            WHERE g.id = m.gpu_type_id) END AS moe_kernel,
                        k.market AS market,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN 0 ELSE (CASE k.market WHEN 'on_demand' THEN m.price_per_gpu_hour WHEN 'interruptible' THEN m.interruptible_allowed_price WHEN 'any' THEN m.any_market_price END * 10000)::bigint END AS price,
                        m.n
                        FROM (SELECT *, 1 AS n
                            FROM catalog_machine) AS m
                        CROSS JOIN (VALUES ('on_demand'), ('interruptible'), ('any')) AS k(market)
                        WHERE NOT (m.gone_at IS NOT NULL)) AS p
                    GROUP BY p.is_available, p.provider_is_active, p.last_seen_at, p.country, p.memory_per_gpu_mib,
                    p.free_gpus, p.tier, p.reliability, p.moe_kernel, p.market, p.price
                    HAVING SUM(p.n) <> 0) AS s) AS x) AS e) AS c
    JOIN (SELECT DISTINCT shape, is_available, provider_is_active, last_seen_at, country, memory_per_gpu_mib,
        free_gpus, tier, reliability, moe_kernel, market
        FROM (SELECT concat_ws('|', quote_nullable(p.is_available), quote_nullable(p.provider_is_active),
                quote_nullable(extract(epoch FROM p.last_seen_at)), quote_nullable(p.country), quote_nullable(p.memory_per_gpu_mib),
                quote_nullable(p.free_gpus), quote_nullable(p.tier), quote_nullable(p.reliability), quote_nullable(p.moe_kernel),
                quote_nullable(p.market)) AS shape, p.is_available, p.provider_is_active, p.last_seen_at,
            p.country, p.memory_per_gpu_mib, p.free_gpus, p.tier, p.reliability, p.moe_kernel, p.market,
            p.price, SUM(p.n)::integer AS n
            FROM (SELECT m.is_available AS is_available,
                CASE WHEN (NOT m.is_available) THEN NULL ELSE m.provider_is_active END AS provider_is_active,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.last_seen_at END AS last_seen_at,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.country END AS country,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.memory_per_gpu_mib END AS memory_per_gpu_mib,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) THEN NULL ELSE m.free_gpus END AS free_gpus,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE m.tier END AS tier,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE (floor(m.reliability * 100) / 100)::numeric(3,2) END AS reliability,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE (SELECT CASE WHEN g.architecture IN ('cdna2',
                        'cdna3') AND btrim(g.compute_capability) !~ '^[0-9]{1,2}\.[0-9]$' THEN 2 WHEN g.architecture = 'blackwell' AND btrim(g.compute_capability) IN ('10.0',
                        '10.1', '10.2', '10.3', '10.4', '10.5', '10.6', '10.7', '10.8', '10.9') THEN 1 ELSE 0 END
                    FROM catalog_gputype g
                    WHERE g.id = m.gpu_type_id) END AS moe_kernel,
                k.market AS market,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN 0 ELSE (CASE k.market WHEN 'on_demand' THEN m.price_per_gpu_hour WHEN 'interruptible' THEN m.interruptible_allowed_price WHEN 'any' THEN m.any_market_price END * 10000)::bigint END AS price,
                m.n
                FROM (SELECT *, 1 AS n
                    FROM catalog_machine) AS m
                CROSS JOIN (VALUES ('on_demand'), ('interruptible'), ('any')) AS k(market)
                WHERE NOT (m.gone_at IS NOT NULL)) AS p
            GROUP BY p.is_available, p.provider_is_active, p.last_seen_at, p.country, p.memory_per_gpu_mib,
            p.free_gpus, p.tier, p.reliability, p.moe_kernel, p.market, p.price
            HAVING SUM(p.n) <> 0) AS s) AS k ON k.shape = c.shape
    GROUP BY c.shape, c.chunk, k.is_available, k.provider_is_active, k.last_seen_at, k.country, k.memory_per_gpu_mib,
    k.free_gpus, k.tier, k.reliability, k.moe_kernel, k.market;
END $fn$;

CREATE OR REPLACE FUNCTION catalog_fleet_truncated() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM pg_advisory_xact_lock(5131334, s) FROM generate_series(0, 63) AS s ORDER BY s;
    DELETE FROM catalog_fleetshape;
    DELETE FROM catalog_fleetdelta WHERE txid = txid_current();
    RETURN NULL;
END $fn$;

CREATE OR REPLACE FUNCTION catalog_fleet_kinds_changed() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF EXISTS (SELECT 1 FROM gpu_old AS o JOIN gpu_new AS g ON g.id = o.id
               WHERE (CASE WHEN o.architecture IN ('cdna2', 'cdna3') AND btrim(o.compute_capability) !~ '^[0-9]{1,2}\.[0-9]$' THEN 2 WHEN o.architecture = 'blackwell' AND btrim(o.compute_capability) IN ('10.0', '10.1', '10.2', '10.3', '10.4', '10.5', '10.6', '10.7', '10.8', '10.9') THEN 1 ELSE 0 END) <> (CASE WHEN g.architecture IN ('cdna2', 'cdna3') AND btrim(g.compute_capability) !~ '^[0-9]{1,2}\.[0-9]$' THEN 2 WHEN g.architecture = 'blackwell' AND btrim(g.compute_capability) IN ('10.0', '10.1', '10.2', '10.3', '10.4', '10.5', '10.6', '10.7', '10.8', '10.9') THEN 1 ELSE 0 END)) THEN
        PERFORM catalog_fleet_rebuild();
        DELETE FROM catalog_fleetdelta WHERE txid = txid_current();
    END IF;
    RETURN NULL;
END $fn$;

SELECT catalog_fleet_rebuild();
