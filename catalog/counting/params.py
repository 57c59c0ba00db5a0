"""Named query parameters for statements assembled from fragments: a fragment compiled with
positional placeholders (`%s`, as `availability_sql` and `fit_sql` give them) becomes one with named
ones, so a statement reads its values by name and may use a fragment twice with one set of values."""
from __future__ import annotations

import re


def named(sql: str, params: list, prefix: str) -> tuple[str, dict]:
    """`sql` with its n-th `%s` as `%(prefix_n)s`, and the values by those names (`%%` is kept)."""
    values: dict = {}

    def name(match: re.Match) -> str:
        if match.group() == "%%":
            return "%%"
        key = f"{prefix}_{len(values)}"
        values[key] = params[len(values)] if len(values) < len(params) else None
        return f"%({key})s"

    renamed = re.sub(r"%%|%s", name, sql)
    if len(values) != len(params):
        raise ValueError(f"{len(params)} values for {len(values)} placeholders in {sql!r}")
    return renamed, values
