-- The SQL that keeps the fleet counts, as `catalog/counting/fleet_counts.py` generates it.
-- Written by `manage.py counting_sql --write`; a test fails when it differs from the generator.
-- Installed by the migrations' frozen copies (catalog/migrations/sql/), never from this file.

CREATE TABLE catalog_fleetshape (id bigserial, shape text NOT NULL, chunk integer NOT NULL, is_available boolean, provider_is_active boolean, last_seen_at timestamp with time zone, country varchar(2), memory_per_gpu_mib integer, free_gpus smallint, tier varchar(10), reliability numeric(3,2), gpu_kind smallint, market varchar(13), prices bigint[] NOT NULL, cum integer[] NOT NULL, PRIMARY KEY (id, market)) PARTITION BY LIST (market);

CREATE TABLE catalog_fleetshape_on_demand PARTITION OF catalog_fleetshape FOR VALUES IN ('on_demand');

CREATE TABLE catalog_fleetshape_interruptible PARTITION OF catalog_fleetshape FOR VALUES IN ('interruptible');

CREATE TABLE catalog_fleetshape_any PARTITION OF catalog_fleetshape FOR VALUES IN ('any');

ALTER TABLE catalog_fleetshape ALTER COLUMN prices SET STORAGE PLAIN, ALTER COLUMN cum SET STORAGE PLAIN;

CREATE INDEX catalog_fleetshape_shape_idx ON catalog_fleetshape (shape);

CREATE INDEX catalog_fleetshape_country_idx ON catalog_fleetshape (country);

CREATE UNLOGGED TABLE catalog_fleetdelta (txid bigint NOT NULL, shape text NOT NULL, is_available boolean, provider_is_active boolean, last_seen_at timestamp with time zone, country varchar(2), memory_per_gpu_mib integer, free_gpus smallint, tier varchar(10), reliability numeric(3,2), gpu_kind smallint, market varchar(13), price bigint NOT NULL, n integer NOT NULL);

CREATE INDEX catalog_fleetdelta_txid_idx ON catalog_fleetdelta (txid);

CREATE UNLOGGED TABLE catalog_fleetpending (txid bigint PRIMARY KEY);

CREATE FUNCTION catalog_fleet_gpu_kind(name varchar, architecture varchar, compute_capability varchar) RETURNS smallint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$SELECT (((CASE WHEN catalog_fleet_gpu_kind.architecture IN ('cdna2', 'cdna3') AND btrim(catalog_fleet_gpu_kind.compute_capability) !~ '^[0-9]{1,2}\.[0-9]$' THEN 2 WHEN catalog_fleet_gpu_kind.architecture = 'blackwell' AND btrim(catalog_fleet_gpu_kind.compute_capability) IN ('10.0', '10.1', '10.2', '10.3', '10.4', '10.5', '10.6', '10.7', '10.8', '10.9') THEN 1 ELSE 0 END) * 3 + (CASE WHEN regexp_replace(catalog_fleet_gpu_kind.name, '^\s+|\s+$', '', 'g') ~* '\ygeforce\y|^(?:nvidia\s+)?rtx\s?\d{4}(?:\s?(?:ti|super|d))*$' THEN 2 WHEN regexp_replace(catalog_fleet_gpu_kind.name, '^\s+|\s+$', '', 'g') ~* '\ypcie\y|\ynvl\y|\y(?:l4|l20|l40s?|t4|a2|a10g?|a16|a30|a40)\y|\yrtx\s?a\d{4}\y|\yada\y|\yquadro\y|\yrtx\s?pro\y' THEN 1 ELSE 0 END)))::smallint$fn$;

ALTER TABLE catalog_gputype ADD COLUMN gpu_kind smallint GENERATED ALWAYS AS (catalog_fleet_gpu_kind(name, architecture, compute_capability)) STORED;

CREATE FUNCTION catalog_fleet_track() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO catalog_fleetdelta (txid, shape, is_available, provider_is_active, last_seen_at, country,
            memory_per_gpu_mib, free_gpus, tier, reliability, gpu_kind, market, price, n) SELECT txid_current(),
        d.*
        FROM (SELECT concat_ws('|', quote_nullable(p.is_available), quote_nullable(p.provider_is_active),
                quote_nullable(extract(epoch FROM p.last_seen_at)), quote_nullable(p.country), quote_nullable(p.memory_per_gpu_mib),
                quote_nullable(p.free_gpus), quote_nullable(p.tier), quote_nullable(p.reliability), quote_nullable(p.gpu_kind),
                quote_nullable(p.market)) AS shape, p.is_available, p.provider_is_active, p.last_seen_at,
            p.country, p.memory_per_gpu_mib, p.free_gpus, p.tier, p.reliability, p.gpu_kind, p.market,
            p.price, SUM(p.n)::integer AS n
            FROM (SELECT m.is_available AS is_available,
                CASE WHEN (NOT m.is_available) THEN NULL ELSE m.provider_is_active END AS provider_is_active,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.last_seen_at END AS last_seen_at,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.country END AS country,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.memory_per_gpu_mib END AS memory_per_gpu_mib,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) THEN NULL ELSE m.free_gpus END AS free_gpus,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE m.tier END AS tier,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE (floor(m.reliability * 100) / 100)::numeric(3,2) END AS reliability,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE m.gpu_type_kind END AS gpu_kind,
                k.market AS market,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN 0 ELSE (CASE k.market WHEN 'on_demand' THEN m.price_per_gpu_hour WHEN 'interruptible' THEN m.interruptible_allowed_price WHEN 'any' THEN m.any_market_price END * 10000)::bigint END AS price,
                m.n
                FROM (SELECT m.*, g.gpu_kind AS gpu_type_kind, 1 AS n
                    FROM fleet_new AS m LEFT JOIN catalog_gputype AS g ON g.id = m.gpu_type_id) AS m
                CROSS JOIN (VALUES ('on_demand'), ('interruptible'), ('any')) AS k(market)
                WHERE NOT (m.gone_at IS NOT NULL)) AS p
            GROUP BY p.is_available, p.provider_is_active, p.last_seen_at, p.country, p.memory_per_gpu_mib,
            p.free_gpus, p.tier, p.reliability, p.gpu_kind, p.market, p.price
            HAVING SUM(p.n) <> 0) AS d;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO catalog_fleetdelta (txid, shape, is_available, provider_is_active, last_seen_at, country,
            memory_per_gpu_mib, free_gpus, tier, reliability, gpu_kind, market, price, n) SELECT txid_current(),
        d.*
        FROM (SELECT concat_ws('|', quote_nullable(p.is_available), quote_nullable(p.provider_is_active),
                quote_nullable(extract(epoch FROM p.last_seen_at)), quote_nullable(p.country), quote_nullable(p.memory_per_gpu_mib),
                quote_nullable(p.free_gpus), quote_nullable(p.tier), quote_nullable(p.reliability), quote_nullable(p.gpu_kind),
                quote_nullable(p.market)) AS shape, p.is_available, p.provider_is_active, p.last_seen_at,
            p.country, p.memory_per_gpu_mib, p.free_gpus, p.tier, p.reliability, p.gpu_kind, p.market,
            p.price, SUM(p.n)::integer AS n
            FROM (SELECT m.is_available AS is_available,
                CASE WHEN (NOT m.is_available) THEN NULL ELSE m.provider_is_active END AS provider_is_active,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.last_seen_at END AS last_seen_at,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.country END AS country,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.memory_per_gpu_mib END AS memory_per_gpu_mib,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) THEN NULL ELSE m.free_gpus END AS free_gpus,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE m.tier END AS tier,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE (floor(m.reliability * 100) / 100)::numeric(3,2) END AS reliability,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE m.gpu_type_kind END AS gpu_kind,
                k.market AS market,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN 0 ELSE (CASE k.market WHEN 'on_demand' THEN m.price_per_gpu_hour WHEN 'interruptible' THEN m.interruptible_allowed_price WHEN 'any' THEN m.any_market_price END * 10000)::bigint END AS price,
                m.n
                FROM (SELECT m.*, g.gpu_kind AS gpu_type_kind, 1 AS n
                    FROM fleet_new AS m LEFT JOIN catalog_gputype AS g ON g.id = m.gpu_type_id
                    UNION ALL SELECT m.*, g.gpu_kind AS gpu_type_kind, -1 AS n
                    FROM fleet_old AS m LEFT JOIN catalog_gputype AS g ON g.id = m.gpu_type_id) AS m
                CROSS JOIN (VALUES ('on_demand'), ('interruptible'), ('any')) AS k(market)
                WHERE NOT (m.gone_at IS NOT NULL)) AS p
            GROUP BY p.is_available, p.provider_is_active, p.last_seen_at, p.country, p.memory_per_gpu_mib,
            p.free_gpus, p.tier, p.reliability, p.gpu_kind, p.market, p.price
            HAVING SUM(p.n) <> 0) AS d;
    ELSE
        INSERT INTO catalog_fleetdelta (txid, shape, is_available, provider_is_active, last_seen_at, country,
            memory_per_gpu_mib, free_gpus, tier, reliability, gpu_kind, market, price, n) SELECT txid_current(),
        d.*
        FROM (SELECT concat_ws('|', quote_nullable(p.is_available), quote_nullable(p.provider_is_active),
                quote_nullable(extract(epoch FROM p.last_seen_at)), quote_nullable(p.country), quote_nullable(p.memory_per_gpu_mib),
                quote_nullable(p.free_gpus), quote_nullable(p.tier), quote_nullable(p.reliability), quote_nullable(p.gpu_kind),
                quote_nullable(p.market)) AS shape, p.is_available, p.provider_is_active, p.last_seen_at,
            p.country, p.memory_per_gpu_mib, p.free_gpus, p.tier, p.reliability, p.gpu_kind, p.market,
            p.price, SUM(p.n)::integer AS n
            FROM (SELECT m.is_available AS is_available,
                CASE WHEN (NOT m.is_available) THEN NULL ELSE m.provider_is_active END AS provider_is_active,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.last_seen_at END AS last_seen_at,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.country END AS country,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.memory_per_gpu_mib END AS memory_per_gpu_mib,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) THEN NULL ELSE m.free_gpus END AS free_gpus,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE m.tier END AS tier,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE (floor(m.reliability * 100) / 100)::numeric(3,2) END AS reliability,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE m.gpu_type_kind END AS gpu_kind,
                k.market AS market,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN 0 ELSE (CASE k.market WHEN 'on_demand' THEN m.price_per_gpu_hour WHEN 'interruptible' THEN m.interruptible_allowed_price WHEN 'any' THEN m.any_market_price END * 10000)::bigint END AS price,
                m.n
                FROM (SELECT m.*, g.gpu_kind AS gpu_type_kind, -1 AS n
                    FROM fleet_old AS m LEFT JOIN catalog_gputype AS g ON g.id = m.gpu_type_id) AS m
                CROSS JOIN (VALUES ('on_demand'), ('interruptible'), ('any')) AS k(market)
                WHERE NOT (m.gone_at IS NOT NULL)) AS p
            GROUP BY p.is_available, p.provider_is_active, p.last_seen_at, p.country, p.memory_per_gpu_mib,
            p.free_gpus, p.tier, p.reliability, p.gpu_kind, p.market, p.price
            HAVING SUM(p.n) <> 0) AS d;
    END IF;
    IF FOUND THEN
        INSERT INTO catalog_fleetpending (txid) VALUES (txid_current()) ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $fn$;

CREATE FUNCTION catalog_fleet_merge() RETURNS void LANGUAGE plpgsql AS $fn$
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
    k AS (SELECT DISTINCT ON (shape) shape, is_available, provider_is_active, last_seen_at, country, memory_per_gpu_mib, free_gpus, tier, reliability, gpu_kind, market FROM gone ORDER BY shape),
    old AS (DELETE FROM catalog_fleetshape AS s USING k WHERE s.shape = k.shape RETURNING s.shape, s.prices, s.cum)
    INSERT INTO catalog_fleetshape (shape, chunk, is_available, provider_is_active, last_seen_at, country,
        memory_per_gpu_mib, free_gpus, tier, reliability, gpu_kind, market, prices, cum) SELECT c.shape,
    c.chunk, k.is_available, k.provider_is_active, k.last_seen_at, k.country, k.memory_per_gpu_mib, k.free_gpus,
    k.tier, k.reliability, k.gpu_kind, k.market, array_agg(c.price ORDER BY c.price), array_agg(c.cum ORDER BY c.price)
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
    k.free_gpus, k.tier, k.reliability, k.gpu_kind, k.market;
END $fn$;

CREATE FUNCTION catalog_fleet_merge_at_commit() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM catalog_fleet_merge();
    RETURN NULL;
END $fn$;

CREATE FUNCTION catalog_fleet_rebuild() RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM pg_advisory_xact_lock(5131334, s) FROM generate_series(0, 63) AS s ORDER BY s;
    DELETE FROM catalog_fleetshape;
    INSERT INTO catalog_fleetshape (shape, chunk, is_available, provider_is_active, last_seen_at, country,
        memory_per_gpu_mib, free_gpus, tier, reliability, gpu_kind, market, prices, cum) SELECT c.shape,
    c.chunk, k.is_available, k.provider_is_active, k.last_seen_at, k.country, k.memory_per_gpu_mib, k.free_gpus,
    k.tier, k.reliability, k.gpu_kind, k.market, array_agg(c.price ORDER BY c.price), array_agg(c.cum ORDER BY c.price)
    FROM (SELECT e.shape, e.chunk, e.price, SUM(e.n) OVER (PARTITION BY e.shape, e.chunk ORDER BY e.price)::integer AS cum
        FROM (SELECT shape, price, n, (row_number() OVER (PARTITION BY shape ORDER BY price) - 1) / 256 AS chunk
            FROM (SELECT shape, price, n
                FROM (SELECT concat_ws('|', quote_nullable(p.is_available), quote_nullable(p.provider_is_active),
                        quote_nullable(extract(epoch FROM p.last_seen_at)), quote_nullable(p.country),
                        quote_nullable(p.memory_per_gpu_mib), quote_nullable(p.free_gpus), quote_nullable(p.tier),
                        quote_nullable(p.reliability), quote_nullable(p.gpu_kind), quote_nullable(p.market)) AS shape,
                    p.is_available, p.provider_is_active, p.last_seen_at, p.country, p.memory_per_gpu_mib,
                    p.free_gpus, p.tier, p.reliability, p.gpu_kind, p.market, p.price, SUM(p.n)::integer AS n
                    FROM (SELECT m.is_available AS is_available,
                        CASE WHEN (NOT m.is_available) THEN NULL ELSE m.provider_is_active END AS provider_is_active,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.last_seen_at END AS last_seen_at,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.country END AS country,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.memory_per_gpu_mib END AS memory_per_gpu_mib,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) THEN NULL ELSE m.free_gpus END AS free_gpus,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE m.tier END AS tier,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE (floor(m.reliability * 100) / 100)::numeric(3,2) END AS reliability,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE m.gpu_type_kind END AS gpu_kind,
                        k.market AS market,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN 0 ELSE (CASE k.market WHEN 'on_demand' THEN m.price_per_gpu_hour WHEN 'interruptible' THEN m.interruptible_allowed_price WHEN 'any' THEN m.any_market_price END * 10000)::bigint END AS price,
                        m.n
                        FROM (SELECT m.*, g.gpu_kind AS gpu_type_kind, 1 AS n
                            FROM catalog_machine AS m LEFT JOIN catalog_gputype AS g ON g.id = m.gpu_type_id) AS m
                        CROSS JOIN (VALUES ('on_demand'), ('interruptible'), ('any')) AS k(market)
                        WHERE NOT (m.gone_at IS NOT NULL)) AS p
                    GROUP BY p.is_available, p.provider_is_active, p.last_seen_at, p.country, p.memory_per_gpu_mib,
                    p.free_gpus, p.tier, p.reliability, p.gpu_kind, p.market, p.price
                    HAVING SUM(p.n) <> 0) AS s) AS x) AS e) AS c
    JOIN (SELECT DISTINCT shape, is_available, provider_is_active, last_seen_at, country, memory_per_gpu_mib,
        free_gpus, tier, reliability, gpu_kind, market
        FROM (SELECT concat_ws('|', quote_nullable(p.is_available), quote_nullable(p.provider_is_active),
                quote_nullable(extract(epoch FROM p.last_seen_at)), quote_nullable(p.country), quote_nullable(p.memory_per_gpu_mib),
                quote_nullable(p.free_gpus), quote_nullable(p.tier), quote_nullable(p.reliability), quote_nullable(p.gpu_kind),
                quote_nullable(p.market)) AS shape, p.is_available, p.provider_is_active, p.last_seen_at,
            p.country, p.memory_per_gpu_mib, p.free_gpus, p.tier, p.reliability, p.gpu_kind, p.market,
            p.price, SUM(p.n)::integer AS n
            FROM (SELECT m.is_available AS is_available,
                CASE WHEN (NOT m.is_available) THEN NULL ELSE m.provider_is_active END AS provider_is_active,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.last_seen_at END AS last_seen_at,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.country END AS country,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) THEN NULL ELSE m.memory_per_gpu_mib END AS memory_per_gpu_mib,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) THEN NULL ELSE m.free_gpus END AS free_gpus,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE m.tier END AS tier,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE (floor(m.reliability * 100) / 100)::numeric(3,2) END AS reliability,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE m.gpu_type_kind END AS gpu_kind,
                k.market AS market,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN 0 ELSE (CASE k.market WHEN 'on_demand' THEN m.price_per_gpu_hour WHEN 'interruptible' THEN m.interruptible_allowed_price WHEN 'any' THEN m.any_market_price END * 10000)::bigint END AS price,
                m.n
                FROM (SELECT m.*, g.gpu_kind AS gpu_type_kind, 1 AS n
                    FROM catalog_machine AS m LEFT JOIN catalog_gputype AS g ON g.id = m.gpu_type_id) AS m
                CROSS JOIN (VALUES ('on_demand'), ('interruptible'), ('any')) AS k(market)
                WHERE NOT (m.gone_at IS NOT NULL)) AS p
            GROUP BY p.is_available, p.provider_is_active, p.last_seen_at, p.country, p.memory_per_gpu_mib,
            p.free_gpus, p.tier, p.reliability, p.gpu_kind, p.market, p.price
            HAVING SUM(p.n) <> 0) AS s) AS k ON k.shape = c.shape
    GROUP BY c.shape, c.chunk, k.is_available, k.provider_is_active, k.last_seen_at, k.country, k.memory_per_gpu_mib,
    k.free_gpus, k.tier, k.reliability, k.gpu_kind, k.market;
END $fn$;

CREATE FUNCTION catalog_fleet_truncated() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM pg_advisory_xact_lock(5131334, s) FROM generate_series(0, 63) AS s ORDER BY s;
    DELETE FROM catalog_fleetshape;
    DELETE FROM catalog_fleetdelta WHERE txid = txid_current();
    RETURN NULL;
END $fn$;

CREATE TRIGGER catalog_fleet_inserted AFTER INSERT ON catalog_machine REFERENCING NEW TABLE AS fleet_new FOR EACH STATEMENT EXECUTE FUNCTION catalog_fleet_track();

CREATE TRIGGER catalog_fleet_updated AFTER UPDATE ON catalog_machine REFERENCING OLD TABLE AS fleet_old NEW TABLE AS fleet_new FOR EACH STATEMENT EXECUTE FUNCTION catalog_fleet_track();

CREATE TRIGGER catalog_fleet_deleted AFTER DELETE ON catalog_machine REFERENCING OLD TABLE AS fleet_old FOR EACH STATEMENT EXECUTE FUNCTION catalog_fleet_track();

CREATE TRIGGER catalog_fleet_truncated AFTER TRUNCATE ON catalog_machine FOR EACH STATEMENT EXECUTE FUNCTION catalog_fleet_truncated();

CREATE FUNCTION catalog_fleet_kinds_changed() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF EXISTS (SELECT 1 FROM gpu_old AS o JOIN gpu_new AS g ON g.id = o.id
               WHERE o.gpu_kind <> g.gpu_kind) THEN
        PERFORM catalog_fleet_rebuild();
        DELETE FROM catalog_fleetdelta WHERE txid = txid_current();
    END IF;
    RETURN NULL;
END $fn$;

CREATE TRIGGER catalog_fleet_kinds_changed AFTER UPDATE ON catalog_gputype REFERENCING OLD TABLE AS gpu_old NEW TABLE AS gpu_new FOR EACH STATEMENT EXECUTE FUNCTION catalog_fleet_kinds_changed();

CREATE CONSTRAINT TRIGGER catalog_fleet_merged AFTER INSERT ON catalog_fleetpending DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION catalog_fleet_merge_at_commit();

SELECT catalog_fleet_rebuild();
