"""The memory a query needs: its breakdown at the precision asked for, and at each lower one."""
from __future__ import annotations

from django.utils.translation import gettext

from catalog import rows as catalog_rows
from sizing.breakdown import Breakdown
from sizing.calculators import estimate
from sizing.errors import SizingError
from sizing.i18n import words_unread
from sizing.specs import PRECISIONS
from sizing.workloads import known_workload

from .model_choices import model_for_workload
from .query import Conflict, NotFound, QueryError, WorkloadQuery


def estimate_for(
    query: WorkloadQuery, precision: int | None = None, model_row=None
) -> tuple[Breakdown, object | None]:
    """The memory breakdown for a query (at another precision when given; `model_row` saves the
    lookup when the caller already has the row)."""
    spec = None
    if not known_workload(query.workload).sizes_model:
        model_row = None  # a notebook sizes GPU memory as entered: no model, no model's config
    else:
        model_row = model_for_workload(query.model_slug, query.workload, model_row)
        if model_row is None:
            raise NotFound({"model": gettext("No model %(slug)s in the catalog suits this workload.") % {
                "slug": repr(query.model_slug)
            }})
        spec = catalog_rows.model_spec(model_row)
    try:
        breakdown = estimate(
            query.workload,
            spec,
            precision=precision or query.precision,
            context=query.context,
            requests=query.requests,
            memory_gib=float(query.memory_gib) if query.memory_gib is not None else None,
            kv_bits=query.kv_bits,
            training=query.training,
            engine=query.engine,
            quantization=query.quantization or None,
            vllm_release=query.vllm_release,
            llamacpp_build=query.llamacpp_build,
            flash_attention=query.flash_attention,
            kv_unified=query.kv_unified,
            gpu_layers=query.gpu_layers,
        )
    except SizingError as error:  # the form checked each value alone: this one does not suit the rest
        raise Conflict({error.field: error.message}) from error
    return breakdown, model_row


def lower_precision_estimates(query: WorkloadQuery, model_row) -> dict[int, Breakdown]:
    """The breakdown at each precision below the query's that the engine sizes (by bits). Their bytes
    alone are read (what fits, the total an alternative names), never their words: sized as
    `words_unread` sizes, at less than half the cost of worded ones."""
    lower: dict[int, Breakdown] = {}
    if query.quantization:  # the GGUF type asked decides the file, whatever the precision
        return lower
    if query.precision is not None:
        with words_unread():
            for precision in PRECISIONS:
                if precision < query.precision:
                    try:
                        lower[precision], _ = estimate_for(query, precision, model_row)
                    except QueryError:
                        continue
    return lower
