"""What to relax when nothing meets every constraint: each change to the query that opens machines,
with the machines and the cheapest price the changed query finds, counted by the fleet reader."""
from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from typing import Any, cast

from catalog import rows as catalog_rows
from sizing import fit as sizing_fit
from sizing import wording
from sizing.breakdown import Breakdown
from sizing.calculators.checks import model_value
from sizing.calculators.llamacpp import ENGINES as GGUF_ENGINES
from sizing.calculators.llamacpp import LlamaCppNeed, LlamaCppSettings, llamacpp_need, offload_placement
from sizing.calculators.llamacpp_inference import LlamaCppBreakdown, gpu_layers_setting
from sizing.countries import ALL_CODES
from sizing.i18n import words_unread
from sizing.markets import wider_choices
from sizing.matching import Recommendation
from sizing.specs import LanguageModelSpec
from sizing.units import MIB
from sizing.workloads import known_workload

from . import fleet
from .estimate import estimate_for
from .query import QueryError, WorkloadQuery

# What a size hint calls the context and the requests where the form's labels say otherwise.
SIZE_NOUNS = {"finetune": {"context": "sequence_length", "requests": "batch_size"}}


def _size_noun(query: WorkloadQuery, field_name: str, model_row) -> str:
    if getattr(model_row, "kind", None) == "speech":
        return "streams"
    return SIZE_NOUNS.get(query.workload, {}).get(field_name, field_name)


def explain_empty(
    query: WorkloadQuery,
    breakdown: Breakdown,
    lower: dict[int, Breakdown],
    model_row,
    now: datetime,
    recommendation: Recommendation,
    newest_fresh_report: datetime | None = None,
) -> Recommendation:
    """An empty answer, said as it is: when no machine anywhere has reported within the staleness
    window, that availability is unknown; otherwise what to change, each hint with the machines the
    changed query finds (see `relax_hints`). `newest_fresh_report`: the answer's own counts' newest
    report within the window, if they saw one (then the fleet is not silent: nothing to ask)."""
    if not recommendation.alternatives_total and newest_fresh_report is None:
        reported = fleet.last_report()
        if reported is None or reported < fleet.stale_cutoff(now):
            opening = wording.silent_fleet_words(reported, now, fleet.stale_after_minutes())
            return replace(recommendation, empty=wording.EmptyAnswer(opening), fleet_silent=True)
    hints = relax_hints(query, breakdown, lower, model_row, now, recommendation)
    empty = cast(wording.EmptyAnswer, recommendation.empty)  # asked only of an empty answer
    return replace(recommendation, empty=wording.EmptyAnswer(empty.opening, tuple(hints)))


def _changed(query: WorkloadQuery, changes) -> WorkloadQuery:
    """The query with a hint's changes applied, as following the hint's link gives it."""
    values = dict(changes)
    if "countries" in values:
        codes = tuple(values.pop("countries"))
        values.update(countries=frozenset(codes), countries_input=codes)
    return replace(query, **values)


def _liftings(base: WorkloadQuery) -> list[WorkloadQuery]:
    """`base` with its price limit and budget lifted, then with its tier as well (where it has them)."""
    liftings = []
    if base.max_price is not None or base.budget is not None:
        liftings.append(replace(base, max_price=None, budget=None))
    if base.tier != "both":
        liftings.append(replace(base, max_price=None, budget=None, tier="both"))
    return liftings


def _limits_to_set(base: WorkloadQuery, lifted: WorkloadQuery, countries) -> list[tuple[str, object]]:
    """The changes of `base`'s limits that open what `lifted` found: its tier, and the price limit
    and budget raised to the cheapest machine's hourly price in whole cents."""
    value = wording.settable(countries[0][1])
    limits: list[tuple[str, object]] = []
    if lifted.tier != base.tier:
        limits.append(("tier", "both"))
    if base.max_price is not None and value > base.max_price:
        limits.append(("max_price", value))
    if base.budget is not None and value > base.budget:
        limits.append(("budget", value))
    return limits


def _openings(
    wanted: list[tuple[WorkloadQuery, Breakdown, bool]], now: datetime,
    counted_too: list[tuple[WorkloadQuery, Breakdown]],
) -> tuple[list, list[tuple[int, list[tuple[str, Decimal]]]]]:
    """For each (base, breakdown, as_is) of `wanted`: what `base` finds at `breakdown` (unless `as_is`
    is False: it is known to find nothing); when nothing, the smallest change of its price limit and
    budget, then of its tier as well, that finds some: (limits changed, machines, [(country, cheapest
    hourly price)]) or None. With them, what each (query, breakdown) of `counted_too` finds as it is:
    (machines, [(country, cheapest hourly price)]). Two counting statements at most, whatever `wanted`
    holds: one asks every query as it is and with its limits lifted (and `counted_too`), the other
    every query with the limits found to set."""
    reader = fleet.fleet_reader()
    asked = [([base] if as_is else []) + _liftings(base) for base, _, as_is in wanted]
    probes = [
        (probe, breakdown)
        for lifted, (_, breakdown, _) in zip(asked, wanted, strict=True)
        for probe in lifted
    ]
    answers = reader.meeting_by_country_many([*counted_too, *probes], now)
    as_asked = answers[:len(counted_too)]
    counted = iter(answers[len(counted_too):])
    found: list = [None] * len(wanted)
    changed = []  # (index in wanted, limits, the changed query, breakdown)
    for index, (base, breakdown, as_is) in enumerate(wanted):
        results = [next(counted) for _ in asked[index]]
        if as_is:
            machines, countries = results.pop(0)
            if machines:
                found[index] = ((), machines, countries)
                continue
        for lifted, (machines, countries) in zip(_liftings(base), results, strict=True):
            if machines:
                limits = _limits_to_set(base, lifted, countries)
                changed.append((index, limits, _changed(base, limits), breakdown))
                break
    again = reader.meeting_by_country_many([(query, breakdown) for _, _, query, breakdown in changed], now)
    for (index, limits, _, _), (machines, countries) in zip(changed, again, strict=True):
        found[index] = (tuple(limits), machines, countries) if machines else None
    return found, as_asked


def _wider_markets(query: WorkloadQuery) -> list[WorkloadQuery]:
    """The query under each market choice wider than its own, narrowest first, where one may open
    machines: a wider choice prices the same machines, some of them cheaper, so it opens only what the
    price limit or the budget kept out (none without either)."""
    if query.max_price is None and query.budget is None:
        return []
    return [replace(query, market=market) for market in wider_choices(query.market)]


def _market_hint(
    wider: list[WorkloadQuery], found: list[tuple[int, list[tuple[str, Decimal]]]]
) -> wording.Hint | None:
    """The narrowest wider market that opens machines, with what it opens (None: none does)."""
    for changed, (machines, countries) in zip(wider, found, strict=True):
        if machines:
            cheapest = countries[0][1]
            return wording.Hint(
                wording.market_words(changed.market, machines, cheapest),
                (("market", changed.market),), machines, cheapest,
            )
    return None


def relax_hints(
    query: WorkloadQuery,
    breakdown: Breakdown,
    lower: dict[int, Breakdown],
    model_row,
    now: datetime,
    recommendation: Recommendation,
) -> list[wording.Hint]:
    """For an empty answer, each change to the query that opens machines, as the engine and this
    module find them: lifting the tier, the price limit or the budget alone (the engine's); a lower
    precision; the machines outside the chosen countries, at this precision and at each lower one;
    a wider market (interruptible allowed, else any) whose cheaper prices meet the price limit or the
    budget; and, when no machine fits at all, the largest context and requests that fit and, under
    llama.cpp and Ollama, the most layers on the GPUs (-ngl, num_gpu) that fit. Where one
    change alone opens nothing, the hint adds the price limit, budget or tier to set as well. Each hint's
    figures are those of the changed query, counted as the answer counts (the kept counts on
    PostgreSQL, a scan of the fleet on the embedded run: the fleet reader's): following its link
    shows them."""
    hints = list(cast(wording.EmptyAnswer, recommendation.empty).hints)  # asked only of an empty answer
    # A limit hint whose value to set is rounded up to whole cents: what that value opens is counted
    # with the openings below (the counts alone, in their statement).
    rounded = []
    for number, hint in enumerate(hints):
        changes = dict(hint.changes)
        code = next((name for name in ("max_price", "budget") if name in changes), None)
        if code is not None and changes[code] != hint.cheapest_hourly:
            rounded.append((number, code))
    preferences = fleet.preferences_for(query)
    opened = {alt.precision for alt in recommendation.precision_alternatives if alt.machines_fitting}
    outside = None
    if query.countries is not None:
        # Outside the chosen countries: every other ISO code (unknown locations stay out, as always).
        outside = replace(query, countries=ALL_CODES - query.countries, countries_input=())
    # A lower precision is named only where it costs less than what is named already.
    cheapest_here = min((h.cheapest_hourly for h in hints if h.cheapest_hourly is not None), default=None)
    cheapest_outside = None
    limited = query.max_price is not None or query.budget is not None or query.tier != "both"
    # Every opening the walk below may weigh, counted at once (`_openings`): at each precision the
    # engine does not name, in the chosen countries with the limits changed (a lower one, when the
    # query is limited), and outside them.
    walk = []
    for precision in [query.precision, *sorted(lower, reverse=True)]:
        at = breakdown if precision == query.precision else lower[cast(int, precision)]  # a lower one
        bits = None if precision == query.precision else precision
        if bits is not None and bits in opened:
            continue  # the engine names it
        walk.append((bits, at))
    wanted: dict[tuple[int | None, str], tuple[WorkloadQuery, Breakdown, bool]] = {}
    for bits, at in walk:
        if bits is not None and limited:
            wanted[bits, "inside"] = (query, at, False)
        if outside is not None:
            wanted[bits, "outside"] = (outside, at, True)
    # The wider markets are counted as they are, with the rounded limits, and so is the query at each
    # smaller size a size hint may name (when no machine fits at all), fewer GPU layers among them:
    # more openings of the same statement (no statement of their own), reading their markets' kept
    # counts too.
    wider = _wider_markets(query)
    largest_memory_mib = recommendation.largest_memory_mib
    smaller = [*_smaller_sizes(query, breakdown, model_row, largest_memory_mib),
               *_fewer_layers(query, breakdown, model_row, largest_memory_mib)
               ] if not recommendation.alternatives_total else []
    found_openings, as_asked = _openings(
        list(wanted.values()), now,
        [*((_changed(query, hints[number].changes), breakdown) for number, _ in rounded),
         *((changed, breakdown) for changed in wider),
         *((query, need) for _, _, need in smaller)],
    )
    for (number, code), (machines, _) in zip(rounded, as_asked[:len(rounded)], strict=True):
        hint = hints[number]
        hints[number] = wording.limit_hint(code, hint.cheapest_hourly, machines, hint.single)
    market_hint = _market_hint(wider, as_asked[len(rounded):len(rounded) + len(wider)])
    if market_hint is not None:
        hints.append(market_hint)
    openings = dict(zip(wanted, found_openings, strict=True))
    for bits, _ in walk:
        if bits is not None and limited:
            found = openings[bits, "inside"]
            if found:  # in the chosen countries: nothing to say of elsewhere at this precision
                limits, machines, countries = found
                cheapest = countries[0][1]
                if cheapest_here is None or cheapest < cheapest_here:
                    cheapest_here = cheapest
                    hints.append(wording.Hint(
                        wording.relaxed_words(machines, cheapest, bits=bits, limits=limits),
                        (("precision", bits), *limits), machines, cheapest,
                    ))
                continue
        if outside is None:
            continue
        found = openings[bits, "outside"]
        if not found:
            continue
        limits, machines, countries = found
        cheapest = countries[0][1]
        if cheapest_outside is not None and cheapest >= cheapest_outside:
            continue  # a lower precision outside is worth naming only when it costs less
        cheapest_outside = cheapest
        codes = tuple(country for country, _ in countries)
        outside_changes = (("countries", codes), *((("precision", bits),) if bits else ()), *limits)
        hints.append(wording.Hint(
            wording.relaxed_words(
                machines, cheapest, outside=preferences, bits=bits, countries=codes, limits=limits
            ),
            outside_changes, machines, cheapest,
        ))
    largest = _largest(smaller, as_asked[len(rounded) + len(wider):])
    if largest and query.engine == "vllm":
        largest = _refined(query, breakdown, model_row, largest, now)
    needs = {(field_name, value): need for field_name, value, need in smaller}
    for field_name, (value, machines, cheapest) in largest.items():
        if field_name == "gpu_layers":
            words = _layers_words(query, value, needs[field_name, value], machines, cheapest)
        else:
            noun = _size_noun(query, field_name, model_row)
            words = wording.relax_size_words(noun, value, machines, cheapest)
        hints.append(wording.Hint(words, ((field_name, value),), machines, cheapest))
    return hints


def _smaller_sizes(
    query: WorkloadQuery, breakdown: Breakdown, model_row, largest_memory_mib: int | None
) -> list[tuple[str, int, Breakdown]]:
    """The context and the requests halved again and again, each with its (smaller) need: the
    figures a size hint may name, largest first per field. A halving that does not lower the need
    (a speech model's fixed window) or that the engine refuses is left out. A need grows with its
    figure, so the halvings are sized from the smallest up, and where one is more than any machine
    considered holds (`largest_memory_mib` per GPU, on any number of GPUs), so is every larger one:
    those are neither sized nor counted."""
    smaller = []
    for field_name in ("context", "requests"):
        current = getattr(query, field_name)
        if current is None or current <= 1 or not known_workload(breakdown.workload).takes_tokens:
            continue
        halvings = []
        value = current // 2
        while value >= 1:
            halvings.append(value)
            value //= 2
        sized = []
        for value in reversed(halvings):
            need = _need_at(query, field_name, value, breakdown, model_row)
            if need is None:
                continue
            if not _may_fit(need, largest_memory_mib):
                break
            sized.append((field_name, value, need))
        smaller.extend(reversed(sized))
    return smaller


def _may_fit(need: Breakdown, largest_memory_mib: int | None) -> bool:
    """Whether a machine with at most `largest_memory_mib` per GPU may hold `need` on some number of its
    GPUs (None: there is no such machine). Where the need depends on the kind of GPU, each kind's memory
    is read raised (`sizing.fit.by_kind`): taken to fit, so as not to leave out a figure some kind holds."""
    if largest_memory_mib is None:
        return False
    if need.kind_space():
        return True
    return any(memory <= largest_memory_mib
               for gpus, memory in sizing_fit.fit_thresholds(need) if gpus != sizing_fit.NO_FIT_GPUS)


def _largest(
    sizes: list[tuple[str, int, Breakdown]], found: list[tuple[int, list[tuple[str, Decimal]]]]
) -> dict[str, tuple[int, int, Decimal | None]]:
    """Per field, the largest of `sizes`' figures (largest first per field) at which some machine fits
    and meets every preference, from what the query finds at each (`found`, in order): (figure,
    machines, cheapest hourly price)."""
    largest: dict[str, tuple[int, int, Decimal | None]] = {}
    for (field_name, value, _), (machines, countries) in zip(sizes, found, strict=True):
        if machines and field_name not in largest:
            largest[field_name] = (value, machines, countries[0][1] if countries else None)
    return largest


def _fewer_layers(
    query: WorkloadQuery, breakdown: Breakdown, model_row, largest_memory_mib: int | None
) -> list[tuple[str, int, Breakdown]]:
    """Under llama.cpp and Ollama, the figures a hint of fewer layers on the GPUs may name: the most
    layers (-ngl, num_gpu) each shape of machine holds, by the calculator's own search
    (`LlamaCppNeed.layers_that_fit`: each catalog GPU memory size at 1, 2, 4 or 8 GPUs, as
    `_held_by_shapes` weighs vLLM's), each once with its need, largest first: at most the memory sizes
    × `SHAPE_GPUS` figures. Only those below what is asked (every layer where not asked) and above none:
    the asked fits nowhere. The memory sizes weighed are those up to the most any machine considered has
    per GPU (`largest_memory_mib`), and that most itself (none without a machine). The searches share
    each -ngl's need. None under another engine."""
    if query.engine not in GGUF_ENGINES or not isinstance(breakdown, LlamaCppBreakdown):
        return []
    if breakdown.spec is None or breakdown.settings is None:
        return []
    every = model_value(breakdown.spec, "layers") + 1  # the layers and the output head
    asked = every if query.gpu_layers is None else min(query.gpu_layers, every)
    if largest_memory_mib is None:
        return []
    need = llamacpp_need(breakdown.spec, breakdown.settings)
    sizes = {memory_mib for memory_mib in catalog_rows.gpu_memory_sizes() if memory_mib <= largest_memory_mib}
    needs: dict[int, LlamaCppNeed] = {}
    figures = {
        need.layers_that_fit(gpus, memory_mib * MIB, needs)
        for memory_mib in sorted(sizes | {largest_memory_mib})
        for gpus in SHAPE_GPUS
        if breakdown.can_split_over(gpus)
    }
    fewer = []
    for figure in sorted((figure for figure in figures if 0 < figure < asked), reverse=True):
        smaller = _need_at(query, "gpu_layers", figure, breakdown, model_row)
        if smaller is not None:
            fewer.append(("gpu_layers", figure, smaller))
    return fewer


def _layers_words(query: WorkloadQuery, gpu_layers: int, need: Breakdown, machines: int,
                  cheapest: Decimal | None) -> str:
    """A hint of fewer layers on the GPUs, with where the build places them (`offload_placement`)."""
    held = cast(LlamaCppBreakdown, need)  # sized under llama.cpp or Ollama (`_fewer_layers`)
    spec, settings = cast(LanguageModelSpec, held.spec), cast(LlamaCppSettings, held.settings)
    first_gpu_layer, output_on_gpu = offload_placement(spec, settings)
    layers = model_value(spec, "layers")
    return wording.relax_layers_words(gpu_layers_setting(query.engine, gpu_layers), layers - first_gpu_layer,
                                      layers, output_on_gpu, machines, cheapest)


def _need_at(query: WorkloadQuery, field_name: str, value: int, breakdown: Breakdown, model_row):
    """The need at a smaller figure, or None where the engine refuses it or it needs no less."""
    try:
        smaller: dict[str, Any] = {field_name: value}
        with words_unread():  # its bytes alone are read: its fit, never its words
            need, _ = estimate_for(replace(query, **smaller), model_row=model_row)
    except QueryError:
        return None
    return need if need.total_bytes < breakdown.total_bytes else None


def _refined(query: WorkloadQuery, breakdown: Breakdown, model_row, largest, now: datetime):
    """Under vLLM, each size hint's halving raised to the largest figure a GPU type holds between it and
    the next halving up, where the fleet has a machine for it (one more counting query). A GPU type
    holds more when asked at its own figure than at the asked one (the profiling step shrinks with
    `max_num_seqs` and `max_model_len`), so each figure is asked again at itself, up to
    `SETTLE_STEPS` times, and the figure it settles at is weighed too."""
    held = _held_by_shapes(query, breakdown)
    needs: dict[tuple[str, int], Breakdown] = {}
    for field_name, (value, _machines, _cheapest) in largest.items():
        ceiling = min(2 * value, getattr(query, field_name))
        for figure, gpus, memory_bytes in held.get(field_name, ()):
            for _ in range(SETTLE_STEPS):
                if not value <= figure < ceiling:
                    break
                need = needs.get((field_name, figure))
                need = need or _need_at(query, field_name, figure, breakdown, model_row)
                if need is None:
                    break
                needs[field_name, figure] = need
                capacity = getattr(need, "capacity", None)
                if capacity is None:
                    break
                again = getattr(capacity.on_machine(gpus, memory_bytes), HELD[field_name])
                if again <= figure:
                    break
                figure = again
    between = [(field_name, figure, need) for (field_name, figure), need in sorted(
        needs.items(), key=lambda item: (item[0][0], -item[0][1]))]
    if not between:
        return largest
    found = fleet.fleet_reader().meeting_by_country_many([(query, need) for _, _, need in between], now)
    return {**largest, **_largest(between, found)}


# The GPU counts a what-if shape splits over (tensor parallelism within one machine).
SHAPE_GPUS = (1, 2, 4, 8)
# What a machine holds of each size field, as its row says it.
HELD = {"context": "max_context_at_requests", "requests": "max_requests_at_context"}
# How many times a size hint's figure is asked again at itself (it settles in one or two).
SETTLE_STEPS = 3


def _held_by_shapes(query: WorkloadQuery, breakdown: Breakdown) -> dict[str, list[tuple[int, int, int]]]:
    """Under vLLM, what each of the catalog's GPU types holds at 1, 2, 4 or 8 GPUs: the longest context
    at the asked requests and the most requests at the asked context, as the machine rows say them
    (`sizing.capacity`), each with its shape (figure, GPUs, memory per GPU in bytes), largest first.
    They refine the halvings, so an empty answer names the largest figure a machine holds, not only
    the largest halving (the transformers estimate keeps its halvings)."""
    capacity = getattr(breakdown, "capacity", None)
    if query.engine != "vllm" or capacity is None:
        return {}
    shapes: dict[str, set[tuple[int, int, int]]] = {"context": set(), "requests": set()}
    for memory_mib in catalog_rows.gpu_memory_sizes():
        for gpus in SHAPE_GPUS:
            if not breakdown.can_split_over(gpus):
                continue
            held = capacity.on_machine(gpus, memory_mib * MIB)
            for field_name, attribute in HELD.items():
                shapes[field_name].add((getattr(held, attribute), gpus, memory_mib * MIB))
    return {field_name: sorted(found, reverse=True) for field_name, found in shapes.items()}
