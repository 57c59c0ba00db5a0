"""The recommendations core: one workload query for the page, HTMX, the API, the CLI and Launch
(`query`), and the reads that answer it (`selectors`)."""
