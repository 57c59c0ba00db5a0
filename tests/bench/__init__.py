"""The performance benchmark: `python -m tests.bench` (see runner.py)."""
