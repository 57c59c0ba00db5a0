"""The throughput plan of a query, and the machines the price-per-million sort lists first.

Both read the same thing from the catalog: the machines that fit the model and meet every preference
(the recommended machines) and carry a tokens/s speed measured on them for the model and precision.
The plan itself is the pure engine's (`sizing.throughput_plan`); here it gets its candidates and its
words. A machine without a measured speed is never in a plan; the answer says how many fit without one.
Each machine is weighed at its price under the market preference (the cheapest of the markets it lets
in, as a single row is priced) and names its market; a plan with interruptible machines says what
happens when one is taken back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from functools import cached_property
from typing import cast

from django.utils.translation import gettext, ngettext

from catalog import database
from catalog import rows as catalog_rows
from catalog.counting import speeds as catalog_speeds
from nodelodge.hardening.deadline import check_deadline
from sizing import fit as sizing_fit
from sizing.breakdown import Breakdown
from sizing.describing import serves_tokens
from sizing.limits import MAX_PLAN_SEARCH_STEPS
from sizing.markets import INTERRUPTIBLE, MarketPrice, market_name
from sizing.offers import MeasuredSpeed
from sizing.preferences import order_key_of, preference_breaks
from sizing.results import speed_row
from sizing.speeds import SECONDS_PER_HOUR, TOKENS_PER_MILLION, price_per_million_tokens
from sizing.throughput_plan import Plan, PlanCandidate, SearchBudget, cheapest_plan, copy_speed
from sizing.units import figure_number, figure_text, money_string, money_text
from sizing.wording import budget_cover

from .fleet import EVERY_MACHINE, fleet_reader
from .query import WorkloadQuery

PLANS_SHOWN = 5  # the cheapest plan, then the cheapest on each single GPU type, by total price
# How often a plan is worked out again when its speeds changed between its reads; the last time
# with nothing else writing (see `planned_answer`).
PLAN_ATTEMPTS = 3


class SpeedsChanged(Exception):  # noqa: N818 - an event, not a programming error
    """A measurement a plan uses was replaced (a refresh) between reading the machines and reading
    their measurements: the plan must be worked out again from one state of the catalog."""


@dataclass(frozen=True)
class SpeedCandidate:
    """A recommended machine with the speed a plan would use on it."""

    row: catalog_speeds.SpeedRow
    plan: PlanCandidate
    hourly_price: Decimal  # the machine's row: its fit's GPUs × price per GPU-hour (the market preference's)

    @cached_property  # only the sort by it reads it: not worked out for the thousands a plan weighs
    def price_per_million_tokens(self) -> Decimal:
        return price_per_million_tokens(self.plan.price_per_gpu_hour, self.row.value, self.row.gpus)


# The listing order (`sizing.preferences.ORDER`) over a speed row, whose id is its machine's.
_row_order_key = order_key_of(id="machine_id")


def speed_candidates(
    query: WorkloadQuery,
    breakdown: Breakdown,
    stale_cutoff: datetime,
    preferences,
    keep: int = 0,
    every_one: bool = False,
) -> tuple[list[SpeedCandidate], int]:
    """The recommended machines (fit, every preference) with a measured speed for the model and
    precision sized, in the machines' default order, and how many there are.

    The fleet reader says which come back (on PostgreSQL only those a plan can use and the `keep`
    cheapest of each speed class); with `every_one`, all of them."""
    thresholds = sizing_fit.fit_thresholds(breakdown)
    if not serves_tokens(breakdown) or not thresholds:
        return [], 0
    reader = EVERY_MACHINE if every_one else fleet_reader()
    precision = cast(int, breakdown.precision)  # a language model's breakdown has its precision
    space = breakdown.kind_space()
    rows, total = reader.speed_rows(query, precision, thresholds, stale_cutoff, keep, space)
    # Thresholds by kind of GPU read each machine at its kind's memory (`sizing.fit.by_kind`).
    kinds = {}
    if space:
        kinds = {usable.gpu_type: breakdown.gpu_kind(usable.architecture, usable.interconnect)
                 for usable in catalog_rows.gpu_types_usable()}
    found = []
    for row in rows:
        memory = sizing_fit.kind_memory(row.memory_per_gpu_mib, kinds.get(row.gpu_type, 0))
        gpus = sizing_fit.gpus_used_by_thresholds(thresholds, memory, row.free_gpus)
        if gpus is None:
            continue
        hourly = row.price_per_gpu_hour * gpus
        # The counted rows met the preferences in SQL already (the same rule, `speed_rows_counted`).
        if total is None and preference_breaks(row, hourly, preferences):
            continue
        found.append(
            SpeedCandidate(
                row=row,
                plan=PlanCandidate(
                    machine_id=row.machine_id,
                    order_key=_row_order_key(hourly, row),
                    price_per_gpu_hour=row.price_per_gpu_hour,
                    free_gpus=row.free_gpus,
                    gpus_per_copy=gpus,
                    measured_tokens_per_s=row.value,
                    measured_gpus=row.gpus,
                    label=f"{row.provider} {row.provider_machine_id}",
                ),
                hourly_price=hourly,
            )
        )
    found.sort(key=lambda candidate: candidate.plan.order_key)
    return found, len(found) if total is None else total


def tokens_per_second_text(value) -> str:
    return gettext("%(tokens)s tokens/s") % {"tokens": figure_text(value)}


def cheapest_per_million(candidates: list[SpeedCandidate], count: int) -> list[int]:
    """Ids of the first `count` machines by price per million tokens (ties: the default order)."""
    ordered = sorted(candidates, key=lambda c: (c.price_per_million_tokens, c.plan.order_key))
    return [c.row.machine_id for c in ordered[:count]]


@dataclass(frozen=True)
class ThroughputAnswer:
    query: WorkloadQuery
    model_name: str
    precision: int
    plans: tuple[Plan, ...]
    rows: dict[int, catalog_speeds.SpeedRow]
    speeds: dict[int, MeasuredSpeed]  # the measurement on each machine of a plan, by machine id
    with_speed: int
    without_speed: int
    search_gave_up: bool = False  # the search's budget ran out before it found a first plan
    search_steps: int = 0  # the steps every plan search of this answer took together
    # The market each machine of a plan is priced in under the market preference, by machine id.
    markets: dict[int, MarketPrice] = field(default_factory=dict)

    @property
    def empty_reason(self) -> str | None:
        if self.plans:
            return None
        target = tokens_per_second_text(self.query.target_tokens)
        if self.search_gave_up:
            return gettext(
                "No plan found within the search's budget of %(steps)s steps, though the machines with a "
                "measured speed may serve %(target)s together: lower the redundancy, or narrow the "
                "countries or GPU types, and ask again."
            ) % {"steps": figure_text(MAX_PLAN_SEARCH_STEPS), "target": target}
        if not self.with_speed:
            return ngettext(
                "No plan: none of the %(machines)s machine that fit and meet every preference has a speed "
                "measured for %(model)s at %(bits)s-bit, and speeds are never estimated.",
                "No plan: none of the %(machines)s machines that fit and meet every preference has a speed "
                "measured for %(model)s at %(bits)s-bit, and speeds are never estimated.",
                self.without_speed,
            ) % {
                "machines": figure_text(self.without_speed), "model": self.model_name, "bits": self.precision
            }
        spare = ngettext(
            "%(spare)s spare copy", "%(spare)s spare copies", self.query.redundancy
        ) % {"spare": self.query.redundancy}
        return ngettext(
            "No plan: the %(machines)s machine with a measured speed cannot serve %(target)s at "
            "%(efficiency)s %% efficiency with %(spare)s between them (free GPUs counted).",
            "No plan: the %(machines)s machines with a measured speed cannot serve %(target)s at "
            "%(efficiency)s %% efficiency with %(spare)s between them (free GPUs counted).",
            self.with_speed,
        ) % {
            "machines": figure_text(self.with_speed), "target": target,
            "efficiency": figure_text(self.query.efficiency), "spare": spare,
        }

    def plan_dict(self, rank: int, plan: Plan, machines_listed: int | None = None) -> dict:
        query = self.query
        types = sorted({self.rows[p.candidate.machine_id].gpu_type for p in plan.parts})
        cover = budget_cover(query.budget, plan.price_per_hour, None)
        per_million = plan.price_per_hour * TOKENS_PER_MILLION / (plan.target_tokens_per_s * SECONDS_PER_HOUR)
        interruptible = sum(
            self.markets[part.candidate.machine_id].market == INTERRUPTIBLE for part in plan.parts
        )
        return {
            "rank": rank,
            "label": gettext("Cheapest plan") if rank == 1 else gettext("Plan %(rank)s") % {"rank": rank},
            "gpu_types": types,
            "price_per_hour": money_string(plan.price_per_hour),
            "price_per_hour_text": money_text(plan.price_per_hour),
            "price_per_million_tokens_at_target": money_string(per_million),
            "gpus": plan.gpus,
            "productive_gpus": plan.productive_gpus,
            "spare_gpus": plan.spare_gpus,
            "usable_tokens_per_s": figure_number(plan.usable_tokens_per_s),
            "budget_hours": float(cover.hours) if cover and cover.hours is not None else None,
            "budget_text": cover.text if cover else None,
            "proven_cheapest": plan.proven_cheapest,
            "price_floor_per_hour": (
                None if plan.price_floor_per_hour is None else money_string(plan.price_floor_per_hour)
            ),
            "search_text": search_words(plan),
            "steps": list(plan.steps),
            "machine_count": len(plan.parts),
            "interruptible_machines": interruptible,
            "interruption_note": plan_interruption_note(interruptible, len(plan.parts)),
            "machines": [self.part_dict(part, plan) for part in plan.parts[:machines_listed]],
        }

    def part_dict(self, part, plan: Plan) -> dict:
        row = self.rows[part.candidate.machine_id]
        speed = self.speeds[row.machine_id]
        candidate = part.candidate
        per_gpu = candidate.tokens_per_s_per_gpu
        return {
            "id": row.machine_id,
            "provider": row.provider,
            "provider_machine_id": row.provider_machine_id,
            "tier": row.tier,
            "gpu_type": row.gpu_type,
            "country": row.country,
            "region": row.region,
            "free_gpus": row.free_gpus,
            "gpus_per_copy": candidate.gpus_per_copy,
            "productive_copies": part.productive_copies,
            "spare_copies": part.spare_copies,
            "gpus": part.gpus,
            "tokens_per_s_per_gpu": figure_number(per_gpu),
            "tokens_per_s_per_gpu_text": tokens_per_second_text(per_gpu),
            "usable_tokens_per_s_per_copy": figure_number(
                copy_speed(candidate, Fraction(plan.efficiency_percent))
            ),
            "price_per_gpu_hour": money_string(candidate.price_per_gpu_hour),
            "price_per_hour": money_string(part.price_per_hour),
            # The market of its price under the market preference (`sizing.markets`).
            "market": self.markets[row.machine_id].market,
            "market_text": market_name(self.markets[row.machine_id].market),
            "measured_speed": speed_row(speed),
            # Written here, not in the page's template: a plan lists up to hundreds of machines.
            "copies_text": copies_words(part, candidate.gpus_per_copy, row.free_gpus),
            "measured_with_text": measured_with_words(speed),
        }


    def to_dict(self, machines_listed: int | None = None) -> dict:
        """The answer's plans; `machines_listed`: each plan's first machines only (the page), else all."""
        return {
            # an answer is made only for a target
            "target_tokens_per_s": format(cast(Decimal, self.query.target_tokens).normalize(), "f"),
            "target_text": tokens_per_second_text(self.query.target_tokens),
            "efficiency_percent": format(self.query.efficiency.normalize(), "f"),
            "redundancy": self.query.redundancy,
            "machines_with_speed": self.with_speed,
            "machines_without_speed": self.without_speed,
            "without_speed_text": ngettext(
                "%(machines)s machine that fit and meet every preference has no measured speed for this "
                "model and precision, so no plan uses them",
                "%(machines)s machines that fit and meet every preference have no measured speed for this "
                "model and precision, so no plan uses them",
                self.without_speed,
            ) % {"machines": figure_text(self.without_speed)},
            "plans": [
                self.plan_dict(rank, plan, machines_listed) for rank, plan in enumerate(self.plans, start=1)
            ],
            "empty_reason": self.empty_reason,
        }


def throughput_answer(
    query: WorkloadQuery,
    breakdown: Breakdown,
    candidates: list[SpeedCandidate],
    machines_total: int,
    model_name: str,
    with_speed: int | None = None,
) -> ThroughputAnswer:
    """The cheapest plan, and with `gpu_plans` the cheapest on each single GPU type, ranked by total
    price per hour."""
    plan_candidates = [c.plan for c in candidates]
    found: dict[tuple, Plan] = {}
    # One budget for the cheapest plan, a quarter of one for each GPU type's: whatever the target and
    # the redundancy, an answer's searches take at most two budgets' steps past their first plans.
    budget = SearchBudget(MAX_PLAN_SEARCH_STEPS)
    type_budgets: list[SearchBudget] = []

    def add(plan: Plan | None) -> None:
        if plan is not None:
            key = tuple((p.candidate.machine_id, p.productive_copies, p.spare_copies) for p in plan.parts)
            found.setdefault(key, plan)

    add(cheapest_plan(plan_candidates, query.target_tokens, query.efficiency, query.redundancy, budget))
    if found and query.gpu_plans:
        # The cheapest on a single GPU type, for the types whose best machine serves tokens cheapest
        # (price per GPU-hour over measured speed per GPU): each such plan is exact for its type.
        by_type: dict[str, list[PlanCandidate]] = {}
        cheapest_at_speed: dict[tuple[str, Fraction], Decimal] = {}
        for candidate in candidates:
            by_type.setdefault(candidate.row.gpu_type, []).append(candidate.plan)
            key = (candidate.row.gpu_type, candidate.plan.tokens_per_s_per_gpu)
            price = candidate.plan.price_per_gpu_hour
            if key not in cheapest_at_speed or price < cheapest_at_speed[key]:
                cheapest_at_speed[key] = price
        # The ratio grows with the price at one speed: the cheapest machine at each speed decides.
        best_ratio: dict[str, Decimal] = {}
        for (gpu_type, per_gpu), price in cheapest_at_speed.items():
            ratio = price / Decimal(per_gpu.numerator) * per_gpu.denominator
            if gpu_type not in best_ratio or ratio < best_ratio[gpu_type]:
                best_ratio[gpu_type] = ratio
        for gpu_type in sorted(by_type, key=lambda name: (best_ratio[name], name))[: PLANS_SHOWN - 1]:
            check_deadline()
            type_budgets.append(SearchBudget(MAX_PLAN_SEARCH_STEPS // 4))
            add(cheapest_plan(
                by_type[gpu_type], query.target_tokens, query.efficiency, query.redundancy, type_budgets[-1]
            ))
    plans = tuple(plan for _, plan in sorted(
        found.items(), key=lambda item: (item[1].price_per_hour, item[1].gpus, item[0])
    )[:PLANS_SHOWN])
    rows = {c.row.machine_id: c.row for c in candidates}
    used = {part.candidate.machine_id for plan in plans for part in plan.parts}
    # With each speed, the market of its machine's price by the rule its price was chosen by; a machine
    # repriced since its speed row was read is worked out again, as a replaced speed is.
    measured, markets = catalog_speeds.measured_speeds(
        (rows[machine_id].speed_id for machine_id in used), query.market
    )
    if any(rows[machine_id].speed_id not in measured for machine_id in used):
        raise SpeedsChanged
    priced = {machine_id: market.price_per_gpu_hour for machine_id, market in markets.items()}
    if any(priced.get(machine_id) != rows[machine_id].price_per_gpu_hour for machine_id in used):
        raise SpeedsChanged
    return ThroughputAnswer(
        query=query,
        model_name=model_name,
        precision=cast(int, breakdown.precision),
        plans=plans,
        rows=rows,
        speeds={machine_id: measured[rows[machine_id].speed_id] for machine_id in used},
        with_speed=len(candidates) if with_speed is None else with_speed,
        without_speed=max(0, machines_total - (len(candidates) if with_speed is None else with_speed)),
        search_gave_up=not plans and budget.gave_up,
        search_steps=budget.spent + sum(each.spent for each in type_budgets),
        markets=markets,
    )


def planned_answer(
    query: WorkloadQuery,
    breakdown: Breakdown,
    candidates: list[SpeedCandidate],
    machines_total: int,
    model_name: str,
    with_speed: int | None,
    read_candidates: Callable[[], tuple[list[SpeedCandidate], int]],
) -> ThroughputAnswer:
    """`throughput_answer`, worked out again from freshly read candidates (`read_candidates`) when a
    refresh replaced a plan's speeds between its reads. On PostgreSQL the answer's reads share one
    snapshot (`catalog.database.one_snapshot`), so this never happens there; on SQLite the last
    attempt holds the write lock, so no refresh can commit inside it."""
    for attempt in range(1, PLAN_ATTEMPTS + 1):
        try:
            with database.one_snapshot(lock_on_sqlite=attempt == PLAN_ATTEMPTS):
                if attempt > 1:
                    candidates, with_speed = read_candidates()
                return throughput_answer(query, breakdown, candidates, machines_total, model_name, with_speed)
        except SpeedsChanged:
            if attempt == PLAN_ATTEMPTS:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def plan_interruption_note(interruptible: int, machines: int) -> str | None:
    """What happens to a plan of `machines` machines, `interruptible` of them interruptible, when the
    provider takes one back: each copy serves on its own, so only that machine's copies stop and the
    others keep serving. None where none is interruptible."""
    if not interruptible:
        return None
    return ngettext(
        "%(count)s of its %(machines)s machines is interruptible: if the provider takes it back, only its "
        "copies stop, and the plan serves that much less until they are replaced; the other machines keep "
        "serving.",
        "%(count)s of its %(machines)s machines are interruptible: if the provider takes one back, only "
        "that machine's copies stop, and the plan serves that much less until they are replaced; the "
        "other machines keep serving.",
        interruptible,
    ) % {"count": interruptible, "machines": machines}


def search_words(plan: Plan) -> str | None:
    """What a plan the search could not prove the cheapest is: the best found, and how far at most
    from the cheapest (None for a proven plan)."""
    if plan.proven_cheapest or plan.price_floor_per_hour is None:
        return None
    above = plan.price_per_hour - plan.price_floor_per_hour
    return gettext(
        "The cheapest plan found within the search's budget of %(steps)s steps, not proven the "
        "cheapest: no plan costs less than %(floor)s/h, so this one is at most %(above)s/h "
        "(%(percent)s %%) above the cheapest."
    ) % {
        "steps": figure_text(MAX_PLAN_SEARCH_STEPS),
        "floor": money_text(plan.price_floor_per_hour),
        "above": money_text(above),
        "percent": figure_text((above * 100 / plan.price_per_hour).quantize(Decimal("0.01"))),
    }


def copies_words(part, gpus_per_copy: int, free_gpus: int) -> str:
    """How a plan uses one machine: "copies: 2 productive + 1 spare, 2 GPUs each; 8 free"."""
    words = gettext("copies: %(productive)s productive") % {"productive": part.productive_copies}
    if part.spare_copies:
        words += " " + gettext("+ %(spare)s spare") % {"spare": part.spare_copies}
    each = ngettext("%(gpus)s GPU each; %(free)s free", "%(gpus)s GPUs each; %(free)s free", gpus_per_copy)
    return words + ", " + each % {"gpus": gpus_per_copy, "free": free_gpus}


def measured_with_words(speed) -> str:
    """How a speed was measured: engine and version, concurrency, lengths, GPUs, date, by whom."""
    words = f"{speed.engine} {speed.engine_version}".strip()
    if speed.concurrency:
        words += ", " + gettext("%(concurrency)s concurrent") % {"concurrency": speed.concurrency}
    if speed.input_tokens:
        words += ", " + gettext("%(input)s→%(output)s tokens") % {
            "input": speed.input_tokens, "output": speed.output_tokens,
        }
    words += ", " + ngettext("%(gpus)s GPU", "%(gpus)s GPUs", speed.gpus) % {"gpus": speed.gpus}
    words += ", " + speed.measured_at.isoformat()[:10]
    if speed.measured_by:
        words += " " + gettext("by %(who)s") % {"who": speed.measured_by}
    return words
