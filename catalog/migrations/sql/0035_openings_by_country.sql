-- Frozen: migration 0035. An empty answer's openings read the other markets' kept counts in the chosen
-- countries alone: by country, not the whole partition.

CREATE INDEX IF NOT EXISTS catalog_fleetshape_country_idx ON catalog_fleetshape (country);
