"""The catalog's models as the wizard and the API offer them: which suit a workload, the precisions
each can be run in, and the published figures the API lists."""
from __future__ import annotations

from catalog import rows as catalog_rows
from catalog.gguf_files import gguf_listing
from catalog.models import ImagePipeline, LanguageModel
from sizing.weights import precision_choices, precision_label
from sizing.workloads import KINDS_BY_WORKLOAD, WIZARD_MODEL_CODES

PRECISION_BITS = (16, 8, 4)


def model_row(slug: str | None, workload: str | None = None):
    """The active catalog row with this slug, of any kind (the workload's own asked first); None when
    there is none."""
    return catalog_rows.get_model(slug, KINDS_BY_WORKLOAD.get(workload or "", ())) if slug else None


def suits(row, workload: str) -> bool:
    return row.kind in KINDS_BY_WORKLOAD.get(workload, ())


def model_for_workload(slug: str | None, workload: str, row=None):
    """The active catalog row with this slug, if its kind suits the workload (`row`: the caller's
    copy of that row, to spare the lookup)."""
    if row is None or row.slug != slug:
        row = model_row(slug, workload)
    return row if row is not None and suits(row, workload) else None


def precision_options(row) -> list[dict]:
    """The precisions a model can be run in, each with its label, or the reason it is not offered."""
    if not isinstance(row, LanguageModel):
        return [{"value": bits, "label": f"{bits}-bit", "available": True, "reason": ""}
                for bits in PRECISION_BITS]
    spec = catalog_rows.language_model_spec(row)
    refused = precision_choices(spec)
    return [
        {"value": bits, "label": precision_label(spec, bits), "available": refused[bits] is None,
         "reason": refused[bits] or ""}
        for bits in PRECISION_BITS
    ]


def model_facts(row) -> dict:
    """What the wizard and the API say of a model, before any words for the page."""
    return {
        "slug": row.slug,
        "name": row.name,
        "kind": row.kind,
        "group": catalog_rows.model_group(row),
        "parameters": row.parameters,
        "active_parameters": getattr(row, "active_parameters", None),
        "license": row.license,
        "config_url": row.config_url,
        "missing": row.missing_values(),
        "precisions": precision_options(row),
        # Language models: the GGUF files published for them (llama.cpp and Ollama answers name one).
        "gguf_files": gguf_listing(getattr(row, "gguf_files", None)),
    }


def suited_models(workload: str, search: str = "") -> list:
    """The rows of the models that suit the workload (none for a notebook), filtered by a name search."""
    if not KINDS_BY_WORKLOAD.get(workload):
        return []
    needle = search.casefold()
    return [
        row for row in catalog_rows.models_for_workload(workload)
        if not needle or needle in row.name.casefold() or needle in row.slug
    ]


FIGURE_FIELDS = {
    "language": ("parameters", "active_parameters", "layers", "attention_heads", "kv_heads", "head_dim",
                 "hidden_size", "intermediate_size", "vocab_size", "max_context", "tied_embeddings",
                 "architecture"),
    "speech": ("parameters", "encoder_layers", "decoder_layers", "d_model", "attention_heads",
               "max_source_positions", "max_target_positions", "vocab_size"),
    "image": ("native_resolution",),
}


def model_listing(workload: str | None) -> list[dict]:
    """Every active model (or those suiting a workload) with its published figures, for the API."""
    workloads = [workload] if workload else list(WIZARD_MODEL_CODES)
    seen: dict[str, dict] = {}
    for name in workloads:
        for row in catalog_rows.models_for_workload(name):
            entry = seen.get(row.slug)
            if entry is None:
                figures = {field: getattr(row, field) for field in FIGURE_FIELDS[row.kind]}
                if isinstance(row, ImagePipeline):
                    figures["components"] = [
                        {"name": c.name, "role": c.role, "parameters": c.parameters}
                        for c in row.components.all()
                    ]
                entry = seen[row.slug] = {
                    **model_facts(row),
                    "workloads": [],
                    "parameters_published": row.parameters_published,
                    "figures": figures,
                }
            for suited in WIZARD_MODEL_CODES:
                if suits(row, suited) and suited not in entry["workloads"]:
                    entry["workloads"].append(suited)
    return list(seen.values())
