"""GPU-memory sizing and machine matching: pure Python, no ORM, no requests.

Calculators take a model's published figures and a workload and return a `Breakdown`;
the matching engine takes a breakdown, plain machine values and preferences and returns
a `Recommendation`. The catalog turns database rows into these values in one place.
"""
