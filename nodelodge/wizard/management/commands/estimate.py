"""Print the GPU memory a workload needs, for a catalog model or for figures given here."""
from __future__ import annotations

import json
from typing import Any, cast

from django.core.management.base import BaseCommand

from nodelodge.recommendations.estimate import estimate_for
from nodelodge.recommendations.llamacpp_switches import flash_attention, kv_unified, switch_refusals
from nodelodge.recommendations.parameters import INTEGER, TRAINING_PARAMETERS
from nodelodge.recommendations.query import QueryError, with_defaults
from nodelodge.recommendations.vllm_release import read_build, read_release, release_refusals
from sizing.calculators import estimate
from sizing.errors import SizingError
from sizing.specs import LanguageModelSpec
from sizing.training import Training
from sizing.units import fmt_gib

from ._query import QUERY_OPTIONS, add_query_arguments, fail, options_to_query, query_from_options

FIGURES = (
    "parameters", "layers", "attention_heads", "kv_heads", "head_dim", "hidden_size", "intermediate_size",
    "vocab_size",
)


class Command(BaseCommand):
    help = "GPU memory needed for a workload, item by item (same numbers as the wizard and the API)."

    def add_arguments(self, parser):
        add_query_arguments(parser, preferences=False)
        group = parser.add_argument_group(
            "a language model given by its published figures (instead of --model)"
        )
        for figure in FIGURES:
            group.add_argument(f"--{figure.replace('_', '-')}", dest=figure, type=int)

    def handle(self, *args, **options):
        if options.get("parameters") is not None and not options.get("model"):
            breakdown = self._from_figures(options)
        else:
            query = query_from_options(self, options, QUERY_OPTIONS)
            try:
                breakdown, _ = estimate_for(query)
            except QueryError as error:
                fail(self, error.errors)
        if options["json"]:
            self.stdout.write(json.dumps(breakdown.as_dict(), indent=2))
            return
        self.stdout.write(breakdown.title)
        width = max(len(item.name) for item in breakdown.items)
        for item in breakdown.items:
            self.stdout.write(f"  {item.name:<{width}}  {fmt_gib(item.bytes):>14}   {item.formula}")
        self.stdout.write(f"  {'Total':<{width}}  {fmt_gib(breakdown.total_bytes):>14}")
        self.stdout.write("Assumptions:")
        for line in breakdown.assumptions:
            self.stdout.write(f"  - {line}")

    def _from_figures(self, options):
        # The options left out take the workload query's defaults, as for a catalog model.
        values = with_defaults(cast(dict[str, str], options_to_query(options, QUERY_OPTIONS).dict()))
        spec = LanguageModelSpec(
            slug="custom",
            name="Custom model",
            parameters=options.get("parameters"),
            layers=options.get("layers"),
            attention_heads=options.get("attention_heads"),
            kv_heads=options.get("kv_heads"),
            head_dim=options.get("head_dim"),
            hidden_size=options.get("hidden_size"),
            intermediate_size=options.get("intermediate_size"),
            vocab_size=options.get("vocab_size"),
        )
        engine = values.get("engine") or "transformers"
        try:
            refused = {**release_refusals(engine, values),
                       **switch_refusals(engine, values, read_build(values))}
            if refused:
                fail(self, refused)
            return estimate(
                values["workload"],
                spec,
                precision=_int_or_none(values.get("precision"), "precision"),
                context=_int_or_none(values.get("context"), "context"),
                requests=_int_or_none(values.get("requests"), "requests"),
                memory_gib=None,
                kv_bits=_int_or_none(values.get("kv_cache"), "kv_cache"),
                training=Training(**cast(dict[str, Any], {
                    p.name: _int_or_none(values.get(p.name), p.name) if p.kind == INTEGER else values[p.name]
                    for p in TRAINING_PARAMETERS
                })),
                engine=engine,
                vllm_release=read_release(values),
                llamacpp_build=read_build(values),
                flash_attention=flash_attention(values),
                kv_unified=kv_unified(values),
                gpu_layers=_int_or_none(values.get("gpu_layers"), "gpu_layers"),
            )
        except SizingError as error:
            fail(self, {error.field: error.message})


def _int_or_none(value, field: str):
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise SizingError(field, f"Enter a whole number, got {value!r}.") from None
