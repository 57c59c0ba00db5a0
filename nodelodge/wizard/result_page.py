"""The answer as the wizard's page shows it: the memory bar, the links to other pages and precisions,
the rows of a throughput plan listed at first, and the rule of thumb beside the figure."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from nodelodge.recommendations.answer import Answer
from nodelodge.recommendations.clusters import clusters_payload
from nodelodge.recommendations.query import CLUSTERS_SHOW
from nodelodge.recommendations.sorts import DEFAULT_SORT
from nodelodge.wizard.rows import group_form_words
from sizing.calculators import RuleOfThumb, rule_of_thumb
from sizing.describing import serves_tokens
from sizing.units import GIB

RULE_OF_THUMB_PRECISION = {16: "FP16", 8: "INT8", 4: "INT4"}
# The page lists a plan's first machines and their lines of the formula; more on request
# (`plan_rows=all`), at most PLAN_ROWS_MOST: a plan of thousands of machines would cost seconds to
# write and megabytes to send, so past them the page links to the API, which lists every machine.
PLAN_ROWS_SHOWN = 10
PLAN_ROWS_MOST = 500


@dataclass
class ResultPage:
    """An answer with what the page shows of it; the answer's own fields read through."""

    answer: Answer
    plan_rows_shown: int | None = PLAN_ROWS_SHOWN  # None: as many as the page lists (PLAN_ROWS_MOST)

    def __getattr__(self, name: str):
        if name == "answer":  # not set yet (a copy being made): no answer to read through
            raise AttributeError(name)
        return getattr(self.answer, name)

    @cached_property
    def data(self) -> dict:
        """The API's JSON, plus the words and links the page shows beside it."""
        # The rows as the table lists them: each row's details are loaded when opened (wizard:machine).
        data = self.recommendation.to_dict(details=False)
        throughput = self.throughput
        data["throughput_plan"] = (
            throughput.to_dict(machines_listed=self.plan_rows_listed) if throughput is not None else None
        )
        for alternative in data["precision_alternatives"]:
            alternative["query"] = self.query.as_query_string(precision=alternative["precision"])
        for hint in data["relax"]:
            hint["query"] = self.relax_query(hint["changes"])
        data["empty_opening"] = self.recommendation.empty.opening if self.recommendation.empty else None
        if data["throughput_plan"]:
            for plan, found in zip(data["throughput_plan"]["plans"], self.throughput.plans, strict=True):
                self._plan_rows(plan, found)
        # The panel lists each cluster's row; its details are a page of their own (wizard:cluster).
        data.update(clusters_payload(self.answer, details=False))
        return data

    @property
    def plan_rows_listed(self) -> int:
        return PLAN_ROWS_MOST if self.plan_rows_shown is None else self.plan_rows_shown

    @property
    def every_plan_row_listed(self) -> bool:
        """Whether `plan_rows=all` was asked: more rows then link to the API, not to this page again."""
        return self.plan_rows_shown is None

    def _plan_rows(self, plan: dict, found) -> None:
        """What the page lists of a plan: its first machines, the formula's lines for those (one per
        machine with productive copies, in the same order) and every line after them. Launch this plan
        books every machine of the plan, listed or not."""
        machine_lines = sum(1 for part in found.parts if part.productive_copies)
        lines_shown = sum(1 for m in plan["machines"] if m["productive_copies"])
        plan["machines_shown"] = plan["machines"]
        plan["machines_more"] = plan["machine_count"] - len(plan["machines"])
        plan["steps_shown"] = plan["steps"][:lines_shown]
        plan["steps_more"] = machine_lines - lines_shown
        every = [{"id": part.candidate.machine_id, "gpus": part.gpus} for part in found.parts]
        plan.update(group_form_words("plan", every, plan["label"]))
        plan["steps_after"] = plan["steps"][machine_lines:]

    @property
    def shows_clusters(self) -> bool:
        """The Clusters section: where clusters were planned and one was found, or only the price limit
        kept them out, or they were asked for (`clusters=show`: then also why there is none)."""
        clusters = self.answer.clusters
        if clusters is None:
            return False
        return bool(clusters.offers or clusters.over_price or self.query.clusters == CLUSTERS_SHOW)

    @property
    def every_plan_row_query(self) -> str:
        return self.query.as_query_string() + "&plan_rows=all"  # keeps gpu_plans: a field of the query

    def page_query(self, page: int) -> str:
        return self.query.as_query_string(page=page if page != 1 else None)

    @property
    def gpu_plans_query(self) -> str | None:
        """This result with the cheapest plan on each GPU type too (None when it has them or no plan)."""
        if self.throughput is None or self.query.gpu_plans or not self.throughput.plans:
            return None
        every_row = "&plan_rows=all" if self.plan_rows_shown is None else ""  # not a field of the query
        return self.query.as_query_string(gpu_plans=1) + every_row

    @property
    def pages(self) -> list[dict]:
        """Links to the pages around this one (first, last and two either side)."""
        listing = self.listing
        numbers = sorted(
            {1, listing.pages, *range(max(1, listing.page - 2), min(listing.pages, listing.page + 2) + 1)}
        )
        return [{"number": n, "query": self.page_query(n), "current": n == listing.page} for n in numbers]

    @property
    def sorted_by_choice(self) -> bool:
        return self.query.sort != DEFAULT_SORT

    @cached_property
    def has_community(self) -> bool:
        rec = self.recommendation
        return any(m.offer.tier == "community" for m in [*rec.machines, *rec.alternatives])

    @cached_property
    def bar(self) -> dict | None:
        """Per-GPU need, item by item, against the GPU of the cheapest machine shown."""
        rec = self.recommendation
        shown = rec.machines or rec.alternatives
        if not shown:
            return None
        first = shown[0]
        gpus = first.fit.gpus_used
        memory = first.fit.memory_per_gpu_bytes
        scale = max(memory, first.fit.need_per_gpu_bytes)
        segments, x = [], 0.0
        for name, share in self.breakdown.per_gpu_shares(gpus):
            width = 100.0 * share / scale
            segments.append({"name": name, "gib": share / GIB, "x": f"{x:.3f}", "width": f"{width:.3f}"})
            x += width
        return {
            "segments": segments,
            "gpus_used": gpus,
            "gpu_type": first.offer.gpu_type,
            "need_gib": first.fit.need_per_gpu_bytes / GIB,
            "memory_gib": memory / GIB,
            "memory_x": f"{min(99.6, 100.0 * memory / scale):.3f}",
        }

    @cached_property
    def rule_of_thumb(self) -> RuleOfThumb | None:
        """The rule of thumb, shown beside the detailed figure for language-model inference."""
        if not serves_tokens(self.breakdown) or self.model is None:
            return None
        parameters = getattr(self.model, "parameters", None)
        label = RULE_OF_THUMB_PRECISION.get(self.query.precision)
        if not parameters or label is None or not hasattr(self.model, "kv_heads"):
            return None
        return rule_of_thumb(parameters, label)
