"""GPU-memory sizing and machine matching: pure Python, no ORM, no requests.

Calculators take a model's published figures and a workload and return a `Breakdown`;
the matching engine takes a breakdown, plain machine values and preferences and returns
a `Recommendation`. The catalog turns database rows into these values in one place.

Every word and figure the engine shows goes through `sizing.i18n`: English without a host, the
active language under Django (`sizing.apps`); the German catalogue is sizing/locale/de.
"""
