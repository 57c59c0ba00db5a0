"""Provider refresh: fetch each provider's feed, validate it, and bring the catalog's machines up to date."""
