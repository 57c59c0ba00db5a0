-- Frozen: migration 0033 undone. The trigger functions work each machine's kind out from its GPU type's
-- fields again, as migration 0032 left them, and the GPU types' column and its function are dropped.
-- The kinds are the same, so the counts stand.

CREATE OR REPLACE FUNCTION catalog_fleet_track() RETURNS trigger LANGUAGE plpgsql AS $fn$
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
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE (SELECT ((CASE WHEN g.architecture IN ('cdna2',
                        'cdna3') AND btrim(g.compute_capability) !~ '^[0-9]{1,2}\.[0-9]$' THEN 2 WHEN g.architecture = 'blackwell' AND btrim(g.compute_capability) IN ('10.0',
                        '10.1', '10.2', '10.3', '10.4', '10.5', '10.6', '10.7', '10.8', '10.9') THEN 1 ELSE 0 END) * 3 + (CASE WHEN regexp_replace(g.name,
                        '^\s+|\s+$', '', 'g') ~* '\ygeforce\y|^(?:nvidia\s+)?rtx\s?\d{4}(?:\s?(?:ti|super|d))*$' THEN 2 WHEN regexp_replace(g.name,
                        '^\s+|\s+$', '', 'g') ~* '\ypcie\y|\ynvl\y|\y(?:l4|l20|l40s?|t4|a2|a10g?|a16|a30|a40)\y|\yrtx\s?a\d{4}\y|\yada\y|\yquadro\y|\yrtx\s?pro\y' THEN 1 ELSE 0 END))
                    FROM catalog_gputype g
                    WHERE g.id = m.gpu_type_id) END AS gpu_kind,
                k.market AS market,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN 0 ELSE (CASE k.market WHEN 'on_demand' THEN m.price_per_gpu_hour WHEN 'interruptible' THEN m.interruptible_allowed_price WHEN 'any' THEN m.any_market_price END * 10000)::bigint END AS price,
                m.n
                FROM (SELECT *, 1 AS n
                    FROM fleet_new) AS m
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
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE (SELECT ((CASE WHEN g.architecture IN ('cdna2',
                        'cdna3') AND btrim(g.compute_capability) !~ '^[0-9]{1,2}\.[0-9]$' THEN 2 WHEN g.architecture = 'blackwell' AND btrim(g.compute_capability) IN ('10.0',
                        '10.1', '10.2', '10.3', '10.4', '10.5', '10.6', '10.7', '10.8', '10.9') THEN 1 ELSE 0 END) * 3 + (CASE WHEN regexp_replace(g.name,
                        '^\s+|\s+$', '', 'g') ~* '\ygeforce\y|^(?:nvidia\s+)?rtx\s?\d{4}(?:\s?(?:ti|super|d))*$' THEN 2 WHEN regexp_replace(g.name,
                        '^\s+|\s+$', '', 'g') ~* '\ypcie\y|\ynvl\y|\y(?:l4|l20|l40s?|t4|a2|a10g?|a16|a30|a40)\y|\yrtx\s?a\d{4}\y|\yada\y|\yquadro\y|\yrtx\s?pro\y' THEN 1 ELSE 0 END))
                    FROM catalog_gputype g
                    WHERE g.id = m.gpu_type_id) END AS gpu_kind,
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
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE (SELECT ((CASE WHEN g.architecture IN ('cdna2',
                        'cdna3') AND btrim(g.compute_capability) !~ '^[0-9]{1,2}\.[0-9]$' THEN 2 WHEN g.architecture = 'blackwell' AND btrim(g.compute_capability) IN ('10.0',
                        '10.1', '10.2', '10.3', '10.4', '10.5', '10.6', '10.7', '10.8', '10.9') THEN 1 ELSE 0 END) * 3 + (CASE WHEN regexp_replace(g.name,
                        '^\s+|\s+$', '', 'g') ~* '\ygeforce\y|^(?:nvidia\s+)?rtx\s?\d{4}(?:\s?(?:ti|super|d))*$' THEN 2 WHEN regexp_replace(g.name,
                        '^\s+|\s+$', '', 'g') ~* '\ypcie\y|\ynvl\y|\y(?:l4|l20|l40s?|t4|a2|a10g?|a16|a30|a40)\y|\yrtx\s?a\d{4}\y|\yada\y|\yquadro\y|\yrtx\s?pro\y' THEN 1 ELSE 0 END))
                    FROM catalog_gputype g
                    WHERE g.id = m.gpu_type_id) END AS gpu_kind,
                k.market AS market,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN 0 ELSE (CASE k.market WHEN 'on_demand' THEN m.price_per_gpu_hour WHEN 'interruptible' THEN m.interruptible_allowed_price WHEN 'any' THEN m.any_market_price END * 10000)::bigint END AS price,
                m.n
                FROM (SELECT *, -1 AS n
                    FROM fleet_old) AS m
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

CREATE OR REPLACE FUNCTION catalog_fleet_rebuild() RETURNS void LANGUAGE plpgsql AS $fn$
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
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE (SELECT ((CASE WHEN g.architecture IN ('cdna2',
                                'cdna3') AND btrim(g.compute_capability) !~ '^[0-9]{1,2}\.[0-9]$' THEN 2 WHEN g.architecture = 'blackwell' AND btrim(g.compute_capability) IN ('10.0',
                                '10.1', '10.2', '10.3', '10.4', '10.5', '10.6', '10.7', '10.8', '10.9') THEN 1 ELSE 0 END) * 3 + (CASE WHEN regexp_replace(g.name,
                                '^\s+|\s+$', '', 'g') ~* '\ygeforce\y|^(?:nvidia\s+)?rtx\s?\d{4}(?:\s?(?:ti|super|d))*$' THEN 2 WHEN regexp_replace(g.name,
                                '^\s+|\s+$', '', 'g') ~* '\ypcie\y|\ynvl\y|\y(?:l4|l20|l40s?|t4|a2|a10g?|a16|a30|a40)\y|\yrtx\s?a\d{4}\y|\yada\y|\yquadro\y|\yrtx\s?pro\y' THEN 1 ELSE 0 END))
                            FROM catalog_gputype g
                            WHERE g.id = m.gpu_type_id) END AS gpu_kind,
                        k.market AS market,
                        CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN 0 ELSE (CASE k.market WHEN 'on_demand' THEN m.price_per_gpu_hour WHEN 'interruptible' THEN m.interruptible_allowed_price WHEN 'any' THEN m.any_market_price END * 10000)::bigint END AS price,
                        m.n
                        FROM (SELECT *, 1 AS n
                            FROM catalog_machine) AS m
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
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN NULL ELSE (SELECT ((CASE WHEN g.architecture IN ('cdna2',
                        'cdna3') AND btrim(g.compute_capability) !~ '^[0-9]{1,2}\.[0-9]$' THEN 2 WHEN g.architecture = 'blackwell' AND btrim(g.compute_capability) IN ('10.0',
                        '10.1', '10.2', '10.3', '10.4', '10.5', '10.6', '10.7', '10.8', '10.9') THEN 1 ELSE 0 END) * 3 + (CASE WHEN regexp_replace(g.name,
                        '^\s+|\s+$', '', 'g') ~* '\ygeforce\y|^(?:nvidia\s+)?rtx\s?\d{4}(?:\s?(?:ti|super|d))*$' THEN 2 WHEN regexp_replace(g.name,
                        '^\s+|\s+$', '', 'g') ~* '\ypcie\y|\ynvl\y|\y(?:l4|l20|l40s?|t4|a2|a10g?|a16|a30|a40)\y|\yrtx\s?a\d{4}\y|\yada\y|\yquadro\y|\yrtx\s?pro\y' THEN 1 ELSE 0 END))
                    FROM catalog_gputype g
                    WHERE g.id = m.gpu_type_id) END AS gpu_kind,
                k.market AS market,
                CASE WHEN (NOT m.is_available) OR (NOT m.provider_is_active) OR ((m.memory_per_gpu_mib IS NULL OR m.memory_per_gpu_mib <= 0)) OR (m.free_gpus < 1) THEN 0 ELSE (CASE k.market WHEN 'on_demand' THEN m.price_per_gpu_hour WHEN 'interruptible' THEN m.interruptible_allowed_price WHEN 'any' THEN m.any_market_price END * 10000)::bigint END AS price,
                m.n
                FROM (SELECT *, 1 AS n
                    FROM catalog_machine) AS m
                CROSS JOIN (VALUES ('on_demand'), ('interruptible'), ('any')) AS k(market)
                WHERE NOT (m.gone_at IS NOT NULL)) AS p
            GROUP BY p.is_available, p.provider_is_active, p.last_seen_at, p.country, p.memory_per_gpu_mib,
            p.free_gpus, p.tier, p.reliability, p.gpu_kind, p.market, p.price
            HAVING SUM(p.n) <> 0) AS s) AS k ON k.shape = c.shape
    GROUP BY c.shape, c.chunk, k.is_available, k.provider_is_active, k.last_seen_at, k.country, k.memory_per_gpu_mib,
    k.free_gpus, k.tier, k.reliability, k.gpu_kind, k.market;
END $fn$;

CREATE OR REPLACE FUNCTION catalog_fleet_kinds_changed() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF EXISTS (SELECT 1 FROM gpu_old AS o JOIN gpu_new AS g ON g.id = o.id
               WHERE ((CASE WHEN o.architecture IN ('cdna2', 'cdna3') AND btrim(o.compute_capability) !~ '^[0-9]{1,2}\.[0-9]$' THEN 2 WHEN o.architecture = 'blackwell' AND btrim(o.compute_capability) IN ('10.0', '10.1', '10.2', '10.3', '10.4', '10.5', '10.6', '10.7', '10.8', '10.9') THEN 1 ELSE 0 END) * 3 + (CASE WHEN regexp_replace(o.name, '^\s+|\s+$', '', 'g') ~* '\ygeforce\y|^(?:nvidia\s+)?rtx\s?\d{4}(?:\s?(?:ti|super|d))*$' THEN 2 WHEN regexp_replace(o.name, '^\s+|\s+$', '', 'g') ~* '\ypcie\y|\ynvl\y|\y(?:l4|l20|l40s?|t4|a2|a10g?|a16|a30|a40)\y|\yrtx\s?a\d{4}\y|\yada\y|\yquadro\y|\yrtx\s?pro\y' THEN 1 ELSE 0 END)) <> ((CASE WHEN g.architecture IN ('cdna2', 'cdna3') AND btrim(g.compute_capability) !~ '^[0-9]{1,2}\.[0-9]$' THEN 2 WHEN g.architecture = 'blackwell' AND btrim(g.compute_capability) IN ('10.0', '10.1', '10.2', '10.3', '10.4', '10.5', '10.6', '10.7', '10.8', '10.9') THEN 1 ELSE 0 END) * 3 + (CASE WHEN regexp_replace(g.name, '^\s+|\s+$', '', 'g') ~* '\ygeforce\y|^(?:nvidia\s+)?rtx\s?\d{4}(?:\s?(?:ti|super|d))*$' THEN 2 WHEN regexp_replace(g.name, '^\s+|\s+$', '', 'g') ~* '\ypcie\y|\ynvl\y|\y(?:l4|l20|l40s?|t4|a2|a10g?|a16|a30|a40)\y|\yrtx\s?a\d{4}\y|\yada\y|\yquadro\y|\yrtx\s?pro\y' THEN 1 ELSE 0 END))) THEN
        PERFORM catalog_fleet_rebuild();
        DELETE FROM catalog_fleetdelta WHERE txid = txid_current();
    END IF;
    RETURN NULL;
END $fn$;

ALTER TABLE catalog_gputype DROP COLUMN gpu_kind;

DROP FUNCTION catalog_fleet_gpu_kind(varchar, varchar, varchar);
