"""The catalog's PostgreSQL counting engine: the wizard's fleet and the throughput plan's speeds,
counted in the database instead of over every machine.

- `availability_sql`: the availability rule compiled into SQL fragments.
- `fit_sql`: the fit thresholds (`sizing.fit`) as SQL: the GPUs a machine would use, its band.
- `fleet_counts`, `latest_speeds`: the tables the writes keep by triggers (counts per shape of
  machine; the latest speed of each machine per model and precision), and the SQL that installs them.
- `folding`: whether the snapshot being read has folded its own changes into the kept counts.
- `fleet_query`: one wizard query as the counting statements see it (`FleetQuery`); `fleet`: its
  counts (`counted_fleet`); `fleet_machines`: the few machines an answer describes; `countries`: the
  counts per country.
- `speeds`: the machines with a measured speed for one model and precision (`speed_rows_counted`).
- `indexes`: the band walks' indexes, their condition compiled from the availability rule.
- `shipped`: the SQL above as checked-in files (`sql/`), laid out on lines by `layout`; `drift`: the
  database against those files.
"""
