"""The search for the cheapest plan: exact, in integers (prices in 1/10,000 of a dollar, speeds over a
common denominator). See the package's "Optimality" and "Redundancy"."""
from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from fractions import Fraction
from itertools import accumulate
from typing import cast

from ..limits import MAX_PLAN_SEARCH_STEPS, PRICE_UNITS
from .plans import (
    DEFAULT_EFFICIENCY_PERCENT,
    DEFAULT_REDUNDANCY,
    Plan,
    PlanCandidate,
    assembled_plan,
    copy_speed,
    validated,
)


class SearchBudget:
    """The work one plan search may do, counted in steps: a node of the branch and bound, a bound
    worked out, a copy sorted or merged. The first plan (the fractional cover rounded up, one sort of
    the copies) is always made; every step after it is paid from the budget, and a search that runs
    out keeps the cheapest plan it found and says how far from the cheapest it can be at most. Its
    cost is therefore the limit plus one sort of the candidates' copies, whatever the target and the
    redundancy asked."""

    def __init__(self, steps: int = MAX_PLAN_SEARCH_STEPS):
        self.limit = steps
        self.spent = 0  # every step counted
        self.budgeted = 0  # the steps paid from the budget (a first plan's sort too)
        self.gave_up = False  # no plan found before the budget ran out (though one may exist)

    @property
    def exhausted(self) -> bool:
        return self.budgeted >= self.limit

    def charge(self, steps: int) -> None:
        """Pays work that must be done once started (a sort of the copies, a merge): it may take the
        budget past its end by one such piece, after which nothing more is started."""
        self.budgeted += steps
        self.spent += steps

    def spend(self, steps: int = 1) -> bool:
        """Pays `steps` when the budget still holds them; False (nothing paid) when it does not."""
        if self.budgeted + steps > self.limit:
            self.budgeted = self.limit
            return False
        self.budgeted += steps
        self.spent += steps
        return True


@dataclass
class _Class:
    """Copies of one usable speed, cheapest first: (price units, candidate index) each."""

    speed: int
    copies: list[tuple[int, int]]


def _classes(candidates: Sequence[PlanCandidate], efficiency: Fraction,
             target: Fraction) -> tuple[list[_Class], int]:
    """Copies by usable speed (exact integers over a common denominator), cheapest first in each."""
    exact: dict[tuple[Decimal, int, int], Fraction] = {}  # many machines share a measured figure and a fit
    keys = []
    for candidate in candidates:
        key = (candidate.measured_tokens_per_s, candidate.measured_gpus, candidate.gpus_per_copy)
        if key not in exact:
            exact[key] = copy_speed(candidate, efficiency)
        keys.append(key)
    denominator = math.lcm(target.denominator, *(speed.denominator for speed in exact.values()))
    scaled = {key: speed.numerator * (denominator // speed.denominator) for key, speed in exact.items()}
    by_speed: dict[int, list[tuple[int, int]]] = {}
    for index, candidate in enumerate(candidates):
        speed = scaled[keys[index]]
        copies = candidate.copies_free
        if speed <= 0 or copies <= 0:
            continue
        units = int(candidate.price_per_gpu_hour * PRICE_UNITS) * candidate.gpus_per_copy
        by_speed.setdefault(speed, []).extend([(units, index)] * copies)
    target_int = math.ceil(target * denominator)
    classes = []
    for speed, speed_copies in by_speed.items():
        speed_copies.sort()  # candidates come in their own order, so the index breaks ties by it
        classes.append(_Class(speed, speed_copies))
    classes.sort(key=lambda cls: -cls.speed)  # fastest first
    return classes, target_int


def _ratio(item: tuple[int, int]) -> float:
    return item[0] / item[1]


class _Cover:
    """Cheapest copies, from the given classes, whose speeds sum to at least the target: exact.

    Branch and bound: classes in order of their best price per speed, each class taking its
    cheapest copies first (a dearer copy of the same speed is never better); a branch is cut when
    its price plus the fractional-knapsack bound of the classes left exceeds the best plan found.
    The bound is computed in floating point and lowered by a relative 1e-9, so it never cuts a
    branch it should not; prices compared between plans are exact integers."""

    SAFETY = 1 - 1e-9

    def __init__(
        self,
        classes: list[tuple[int, list[tuple[int, int]]]],
        target: int,
        budget: SearchBudget,
        ceiling: int | None = None,
    ):
        self.target = target
        self.budget = budget
        # Whether the search ran to its end (the answer is then the cheapest cover below the
        # ceiling), and else a lower bound on every cover's price (the fractional cover's, rounded up).
        self.exact = True
        self.floor: int | None = None
        self.ceiling = ceiling  # plans dearer than this are of no interest to the caller
        trimmed = []
        for speed, copies in classes:
            copies = copies[: -(-target // speed)]  # never more copies than reach the target alone
            if copies:
                trimmed.append((speed, copies))
        trimmed.sort(key=lambda item: (item[1][0][0] / item[0], -item[0]))
        self.classes = trimmed
        self.prefix = [[0, *accumulate(units for units, _ in copies)] for _, copies in trimmed]
        self._suffix: dict[int, tuple[list[int], list[int], list[tuple[int, int]]]] = {}
        self.best: tuple[int, int] | None = None  # (price units, copies)
        self.best_counts: list[int] | None = None

    def _suffix_of(self, start: int) -> tuple[list[int], list[int], list[tuple[int, int]]]:
        found = self._suffix.get(start)
        if found is None:
            # Every suffix at once, each merged from the next one (copies of a class are already in
            # order of price per speed, all of one speed).
            merged: list[tuple[int, int]] = []
            for index in range(len(self.classes) - 1, -1, -1):
                speed, copies = self.classes[index]
                self.budget.charge(len(copies) + len(merged))
                merged = list(heapq.merge([(units, speed) for units, _ in copies], merged, key=_ratio))
                self._suffix[index] = (
                    list(accumulate(speed for _, speed in merged)),
                    list(accumulate(units for units, _ in merged)),
                    merged,
                )
            found = self._suffix[start]
        return found

    def bound(self, start: int, need: int) -> float | None:
        """A lower bound on the price of covering `need` from classes start.. (None: they cannot)."""
        if need <= 0:
            return 0.0
        if start >= len(self.classes):
            return None
        speeds, prices, units = self._suffix_of(start)
        position = bisect_left(speeds, need)
        if position >= len(speeds):
            return None
        before_speed = speeds[position - 1] if position else 0
        before_price = prices[position - 1] if position else 0
        price, speed = units[position]
        return (before_price + price * (need - before_speed) / speed) * self.SAFETY

    def solve(self) -> tuple[int, list[tuple[int, int]]] | None:
        """(price units, copies picked) of the cheapest cover dearer than nothing found before and
        cheaper than the ceiling; None when there is none.

        First the fractional cover (copies by price per speed) and its rounding up, a plan; then every
        copy whose reduced price (its price minus the fractional cover's marginal price of its speed)
        shows that no cheaper plan can leave it out, or take it, is fixed (Dembo and Hammer's
        reduction, exact in integers); the branch and bound runs over the copies left."""
        # Price per speed as an exact integer key: two different ratios of speeds below `scale`
        # differ by at least 1 ÷ scale², so their floors times scale² differ too.
        scale = max((speed for speed, _ in self.classes), default=1) ** 2 + 1
        self.budget.charge(sum(len(copies) for _, copies in self.classes))
        items = sorted(
            (
                (units, speed, k, position)
                for k, (speed, copies) in enumerate(self.classes)
                for position, (units, _) in enumerate(copies)
            ),
            key=lambda item: (item[0] * scale // item[1], -item[1], item[2], item[3]),
        )
        covered = price = 0
        brk = None
        for position, (units, speed, _, _) in enumerate(items):
            if covered + speed >= self.target:
                brk = position
                break
            covered += speed
            price += units
        if brk is None:
            return None
        b_units, b_speed = items[brk][0], items[brk][1]
        # The fractional cover's price, rounded up: no cover of integer prices costs less.
        self.floor = -(-(price * b_speed + b_units * (self.target - covered)) // b_speed)
        # A first plan: the fractional cover's whole copies, and for the rest the cheapest single
        # copy that covers it (the break copy at worst).
        remainder = self.target - covered
        last = min(
            (item for item in items[brk:] if item[1] >= remainder), key=lambda item: (item[0], -item[1])
        )
        greedy = price + last[0]
        limit = greedy if self.ceiling is None else min(greedy, self.ceiling)
        found: tuple[int, list[tuple[int, int]]] | None = None
        if self.ceiling is None or greedy < self.ceiling:
            picked = [self.classes[k][1][pos] for _, _, k, pos in items[:brk]]
            found = (greedy, [*picked, self.classes[last[2]][1][last[3]]])
        # Fix copies: in (every cheaper plan takes them) or out (no cheaper plan takes them).
        lp_scaled = price * b_speed + b_units * (self.target - covered)
        fixed_in = [0] * len(self.classes)
        fixed_out = [0] * len(self.classes)
        for position, (units, speed, k, _) in enumerate(items):
            reduced = units * b_speed - b_units * speed
            if position < brk and lp_scaled - reduced >= limit * b_speed:
                fixed_in[k] += 1
            elif position > brk and lp_scaled + reduced >= limit * b_speed:
                fixed_out[k] += 1
        need, base_price, base = self.target, 0, []
        rest = []
        for k, (speed, copies) in enumerate(self.classes):
            need -= fixed_in[k] * speed
            base_price += self.prefix[k][fixed_in[k]]
            base += copies[: fixed_in[k]]
            free = copies[fixed_in[k] : len(copies) - fixed_out[k]]
            if free:
                rest.append((speed, free))
        if need <= 0:
            if base_price < limit or found is None and (self.ceiling is None or base_price < self.ceiling):
                found = (base_price, base)
            return found
        sub = _Cover(rest, need, self.budget, ceiling=limit - base_price)
        counts = [0] * len(sub.classes)
        sub._search(0, need, 0, 0, counts)
        self.exact = sub.exact
        if sub.best is not None and base_price + sub.best[0] < limit:
            counts_of_best = cast(list[int], sub.best_counts)  # set with best
            found = (base_price + sub.best[0], base + _picked(sub, counts_of_best))
        return found

    def _search(self, index: int, need: int, price: int, copies: int, counts: list[int]) -> None:
        """Depth first over the classes' counts, most copies of the best class first. The caller has
        checked this node's bound; here each child's bound is checked before it is entered. A
        child's bound (its price plus the fractional cover of the rest) is convex in the count, so
        once it is over the limit and rising as the count falls, every smaller count is too."""
        if need <= 0:
            if self.best is None or (price, copies) < self.best:
                self.best = (price, copies)
                self.best_counts = list(counts)
            return
        if index >= len(self.classes):
            return
        if not self.budget.spend():
            self.exact = False
            return
        speed, class_copies = self.classes[index]
        most = min(len(class_copies), -(-need // speed))
        prefix = self.prefix[index]
        if index == len(self.classes) - 1:
            # The last class: only the count that just reaches the target can be the cheapest.
            if most * speed >= need:
                counts[index] = most
                self._search(index + 1, need - most * speed, price + prefix[most], copies + most, counts)
                counts[index] = 0
            return
        previous = None
        for count in range(most, -1, -1):
            if self.budget.exhausted:
                self.exact = False
                break
            rest = need - count * speed
            child_price = price + prefix[count]
            if rest <= 0:
                child_bound = float(child_price)
            else:
                lower = self.bound(index + 1, rest)
                if lower is None:
                    break  # the classes after this one cannot cover even this much; less is worse
                child_bound = child_price + lower
            limit = self.best[0] if self.best is not None else self.ceiling
            if limit is not None and child_bound >= limit:
                if previous is not None and child_bound > previous * (1 + 1e-6):
                    break
                previous = child_bound
                continue
            previous = child_bound
            counts[index] = count
            self._search(index + 1, rest, child_price, copies + count, counts)
        counts[index] = 0


def cheapest_plan(
    candidates: Sequence[PlanCandidate],
    target_tokens_per_s: object,
    efficiency_percent: object = DEFAULT_EFFICIENCY_PERCENT,
    redundancy: int = DEFAULT_REDUNDANCY,
    budget: SearchBudget | None = None,
) -> Plan | None:
    """The cheapest plan serving the target with `redundancy` spare copies, or None when the
    candidates cannot serve it (or, the budget spent, no plan was found: `budget.gave_up`). Pure: the
    same candidates in any order give the same plan. A search that ran out of budget returns the
    cheapest plan it found, with `proven_cheapest` False and the price no plan can go below."""
    target, efficiency, redundancy = validated(target_tokens_per_s, efficiency_percent, redundancy)
    budget = budget if budget is not None else SearchBudget()
    candidates = sorted(candidates, key=lambda c: c.order_key)
    budget.charge(len(candidates))
    classes, target_int = _classes(candidates, efficiency, target)
    if not _servable(classes, target_int, redundancy):
        return None
    best: tuple[int, int, dict[int, list[int]]] | None = (
        None  # price, copies, candidate -> [productive, spare]
    )

    def consider(price: int, copies: int, productive: list[tuple[int, int]],
                 spare: list[tuple[int, int]]) -> None:
        nonlocal best
        if best is not None and (price, copies) >= best[:2]:
            return
        chosen: dict[int, list[int]] = {}
        for _, index in productive:
            chosen.setdefault(index, [0, 0])[0] += 1
        for _, index in spare:
            chosen.setdefault(index, [0, 0])[1] += 1
        best = (price, copies, chosen)

    everything = _Cover([(cls.speed, cls.copies) for cls in classes], target_int, budget)
    if redundancy == 0:
        solved = everything.solve()
        if solved is not None:
            consider(solved[0], len(solved[1]), solved[1], [])
        floor = None if everything.exact else everything.floor
    else:
        floor = _with_spares(classes, target_int, redundancy, everything, consider, lambda: best)
    if best is None:
        budget.gave_up = floor is not None
        return None
    plan = assembled_plan(candidates, best[2], target, efficiency, redundancy)
    if floor is None or floor >= best[0]:
        return plan
    return replace(plan, proven_cheapest=False, price_floor_per_hour=Decimal(floor) / PRICE_UNITS)


def _servable(classes: list[_Class], target: int, redundancy: int) -> bool:
    """Whether every copy together serves the target with the R fastest down: a plan exists exactly
    then, so "no plan" is told apart from "none found within the budget"."""
    skip, total = redundancy, 0
    for cls in classes:  # fastest first
        spare = min(skip, len(cls.copies))
        skip -= spare
        total += cls.speed * (len(cls.copies) - spare)
    return total >= target


# consider(price units, copies, productive copies, spare copies): `cheapest_plan` keeps the cheapest.
_Consider = Callable[[int, int, list[tuple[int, int]], list[tuple[int, int]]], None]


def _with_spares(
    classes: list[_Class], target: int, redundancy: int, everything: _Cover, consider: _Consider,
    best: Callable[[], tuple[int, int, dict[int, list[int]]] | None],
) -> int | None:
    """The cheapest plan with R spare copies (see the module's "Redundancy"); returns None when the
    search ran to its end, else the price (in units) no plan can go below.

    Spare copies are the R fastest of the plan: for each speed V that the R-th fastest copy may have
    (a class, the pivot), spares come from classes at least that fast and productive copies from
    classes at most that fast; the pivot's class may give to both (its cheapest copies go first).
    Lower bounds cut most pivots before any search: the productive copies cost at least the cheapest
    cover from every class (no spares), and at least the fractional cover from the pivot's class and
    the slower ones."""
    budget = everything.budget
    solved = everything.solve()
    if solved is None:
        return None if everything.exact else everything.floor
    cover_price, used = solved
    # Productive copies cost at least the cheapest cover: the one found when proven, else its floor.
    cover_bound = cover_price if everything.exact else cast(int, everything.floor)  # set when not exact
    # A first plan: the cheapest cover, plus the R cheapest copies it leaves that are at least as
    # fast as its fastest copy.
    taken = set(used)
    fastest = max((speed for speed, copies in everything.classes if taken.intersection(copies)), default=0)
    extra = sorted(
        copy for cls in classes if cls.speed >= fastest for copy in cls.copies if copy not in taken
    )[:redundancy]
    if len(extra) == redundancy:
        consider(cover_price + sum(u for u, _ in extra), len(used) + redundancy, used, extra)
    # The fractional cover from the classes at most as fast as each pivot, all in one pass over the
    # copies in order of price per speed.
    by_ratio = sorted(((units, cls.speed) for cls in classes for units, _ in cls.copies), key=_ratio)
    budget.charge(len(by_ratio) * (1 + len(classes)))
    pool_bounds = []
    for pivot in classes:
        covered = price = 0
        bound = None
        for units, speed in by_ratio:
            if speed > pivot.speed:
                continue
            if covered + speed >= target:
                bound = (price + units * (target - covered) / speed) * _Cover.SAFETY
                break
            covered += speed
            price += units
        pool_bounds.append(bound)
    faster: list[tuple[int, int]] = []  # the R cheapest copies of the classes faster than the pivot
    splits = []  # (lower bound, pivot's place, copies the pivot gives as spares, spare copies)
    for position, pivot in enumerate(classes):
        pool_bound = pool_bounds[position]
        for from_pivot in range(0, min(redundancy, len(pivot.copies)) + 1):
            from_faster = redundancy - from_pivot
            if from_faster > len(faster) or pool_bound is None:
                continue
            spare = faster[:from_faster] + pivot.copies[:from_pivot]
            spare_price = sum(units for units, _ in spare)
            splits.append(
                (spare_price + max(cover_bound, pool_bound), position, from_pivot, spare, spare_price)
            )
        faster = sorted(faster + pivot.copies[:redundancy])[:redundancy]
    budget.charge(len(splits) * (1 + redundancy))
    # Best first: the split with the lowest bound is searched first, and once a plan is as cheap as
    # the next bound, no split left can beat it. A split left unsearched, or searched only in part,
    # keeps its bound as the floor of what the search did not see.
    splits.sort(key=lambda split: (split[0], split[1], split[2]))
    floor: float | None = None
    for lower, position, from_pivot, spare, spare_price in splits:
        current = best()
        if current is not None and lower >= current[0]:
            break
        if budget.exhausted:
            floor = lower if floor is None else min(floor, lower)
            break
        pivot = classes[position]
        rest = pivot.copies[from_pivot:]
        pool = ([(pivot.speed, rest)] if rest else []) + [
            (cls.speed, cls.copies) for cls in classes[position + 1 :]
        ]
        cover = _Cover(pool, target, budget, ceiling=current[0] - spare_price if current else None)
        found = cover.solve()
        if found is not None:
            consider(spare_price + found[0], redundancy + len(found[1]), found[1], spare)
        if not cover.exact and cover.floor is not None:
            unseen = spare_price + cover.floor
            floor = unseen if floor is None else min(floor, unseen)
    return None if floor is None else math.ceil(floor)


def _picked(cover: _Cover, counts: list[int]) -> list[tuple[int, int]]:
    return [copy for (_, copies), count in zip(cover.classes, counts, strict=True) for copy in copies[:count]]
