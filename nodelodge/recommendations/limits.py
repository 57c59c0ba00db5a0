"""The limits of a workload query's inputs, and how many machines an answer lists."""
from __future__ import annotations

from decimal import Decimal

MAX_COUNTRY_ITEMS = 300
MAX_MONEY = Decimal("1000000000")
MAX_MEMORY_GIB = 10_000  # a notebook's GPU memory, and the memory per GPU a list is filtered by
MAX_LIMIT = 1000  # machines listed in one answer; all are counted
PAGE_LIMIT = 25  # machines the page lists when the query names no limit
API_LIMIT = 100  # machines the API lists when the query names no limit
