"""JSON API: the wizard's answers for scripts. Same query string, same code, same result."""
from __future__ import annotations

from csp.decorators import csp_update
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest
from django.utils.translation import gettext
from ninja import Field, NinjaAPI, Query, Schema, Swagger
from ninja.errors import Throttled
from ninja.errors import ValidationError as NinjaValidationError

from catalog import database
from nodelodge.hardening.errors import log_unexpected, server_error_json
from nodelodge.hardening.faults import database_unavailable_json, log_database_unavailable
from nodelodge.hardening.throttling import ApiRateThrottle, throttled_message
from nodelodge.recommendations.answer import recommendation_for
from nodelodge.recommendations.estimate import estimate_for
from nodelodge.recommendations.model_choices import model_listing
from nodelodge.recommendations.query import DEFAULTS, QueryError, WorkloadQuery, parse_query
from sizing.limits import API_LIMIT
from sizing.workloads import WIZARD_CODES, WORKLOADS


class ConsoleSwagger(Swagger):
    """Swagger UI in the console's frame (a language, a main landmark, the way back, readable
    colours); its operations are not deep links, which Swagger UI nests inside their buttons."""

    template = "wizard/api_docs.html"


api = NinjaAPI(
    title="Node Lodge console API",
    version="1",
    description=(
        "GPU memory estimates and machine recommendations for a workload. Parameters are the "
        "wizard's query string. Sizes are bytes and GiB (2^30 bytes); money is USD as decimal strings."
    ),
    urls_namespace="api",
    throttle=[ApiRateThrottle()],
    # Swagger UI (served from ninja's own static files) draws its icons from data: URIs; only the
    # docs page gets that allowance, scripts and styles stay 'self'-only there too.
    docs_decorator=csp_update({"img-src": ["data:"]}),
    docs=ConsoleSwagger(settings={"deepLinking": False}),
)


# The signed-in user's watches (nodelodge/watches/api.py).
api.add_router("/watches", "nodelodge.watches.api.router")


def _own_models() -> str:
    return ", ".join(f"{w.default_model} ({w.code})" for w in WORKLOADS if w.in_wizard and w.default_model)


class WorkloadParams(Schema):
    """Every parameter is read as text and validated by the console's own rules, so a bad value
    gets a 400 naming its field rather than a generic validation error. A parameter left out takes
    the default the schema names, as on the page and in the commands (`query.DEFAULTS`)."""

    workload: str | None = DEFAULTS["workload"]
    model: str | None = Field(None, description=f"Default: the workload's own model: {_own_models()}.")
    precision: str | None = DEFAULTS["precision"]
    kv_cache: str | None = DEFAULTS["kv_cache"]
    context: str | None = DEFAULTS["context"]
    requests: str | None = DEFAULTS["requests"]
    memory_gib: str | None = DEFAULTS["memory_gib"]


class PreferenceParams(WorkloadParams):
    budget: str | None = None
    max_price: str | None = None
    tier: str | None = DEFAULTS["tier"]
    countries: str | None = None
    limit: str | None = None
    sort: str | None = None
    gpu: str | None = None
    min_memory_gib: str | None = None
    confidence: str | None = None
    group: str | None = None
    page: str | None = None
    target_tokens: str | None = None
    efficiency: str | None = None
    redundancy: str | None = None
    gpu_plans: str | None = None


class ItemOut(Schema):
    name: str
    gib: float
    bytes: int
    formula: str
    per_gpu: bool


class MemoryOut(Schema):
    workload: str
    title: str
    precision: int | None
    total_gib: float
    total_bytes: int
    items: list[ItemOut]
    assumptions: list[str]


class SpeedOut(Schema):
    model: str
    precision: int
    value: float
    unit: str
    gpus: int
    engine: str
    engine_version: str
    concurrency: int | None
    input_tokens: int | None
    output_tokens: int | None
    measured_at: str
    measured_by: str
    source: str


class MachineOut(Schema):
    id: int
    provider: str
    tier: str
    provider_machine_id: str
    gpu_type: str
    gpu_count: int
    free_gpus: int
    gpus_used: int
    memory_per_gpu_gib: float
    need_per_gpu_gib: float
    headroom_gib: float
    headroom_percent: float
    tight_margin: bool
    why_gpus: str
    memory_source: str
    memory_source_short: str
    memory_source_words: str
    memory_flag: str | None
    country: str | None
    country_name: str | None
    region: str
    price_per_gpu_hour: str
    price_per_hour: str
    budget_hours: float | None
    budget_days: float | None
    budget_text: str | None
    budget_capped_by_booking_limit: bool
    booking_limit_hours: int | None
    interruptible: bool
    confidence: str
    confidence_reasons: list[str]
    why_it_fits: list[str]
    limits: list[str]
    measured_speeds: list[SpeedOut]
    price_per_million_tokens: str | None
    price_per_million_tokens_text: str | None
    last_seen: str | None


class AlternativeOut(MachineOut):
    breaks: list[str]
    breaks_text: list[str]


class PrecisionAlternativeOut(Schema):
    precision: int
    total_gib: float
    machines_fitting: int
    more_machines: int
    cheapest_price_per_hour: str | None
    cheapest_machine_id: int | None
    text: str


class ConstraintOut(Schema):
    label: str
    value: str


class PlanMachineOut(Schema):
    id: int
    provider: str
    provider_machine_id: str
    tier: str
    gpu_type: str
    country: str | None
    region: str
    free_gpus: int
    gpus_per_copy: int
    productive_copies: int
    spare_copies: int
    gpus: int
    tokens_per_s_per_gpu: float
    tokens_per_s_per_gpu_text: str
    usable_tokens_per_s_per_copy: float
    price_per_gpu_hour: str
    price_per_hour: str
    measured_speed: SpeedOut
    copies_text: str
    measured_with_text: str


class PlanOut(Schema):
    rank: int
    label: str
    gpu_types: list[str]
    price_per_hour: str
    price_per_hour_text: str
    price_per_million_tokens_at_target: str
    gpus: int
    productive_gpus: int
    spare_gpus: int
    usable_tokens_per_s: float
    budget_hours: float | None
    budget_text: str | None
    steps: list[str]
    machines: list[PlanMachineOut]


class ThroughputPlanOut(Schema):
    target_tokens_per_s: str
    target_text: str
    efficiency_percent: str
    redundancy: int
    machines_with_speed: int
    machines_without_speed: int
    without_speed_text: str
    plans: list[PlanOut]
    empty_reason: str | None


class GroupOut(Schema):
    gpu_type: str
    machines: int


class ListingOut(Schema):
    sort: str
    sort_label: str
    page: int
    pages: int
    per_page: int
    machines_matching: int
    sorted_among_cheapest: int | None
    groups: list[GroupOut]


class RelaxHintOut(Schema):
    text: str
    changes: dict[str, str]
    machines: int
    cheapest_price_per_hour: str | None
    query: str | None


class RecommendationsOut(Schema):
    memory: MemoryOut
    machines: list[MachineOut]
    machines_total: int
    alternatives: list[AlternativeOut]
    alternatives_total: int
    precision_alternatives: list[PrecisionAlternativeOut]
    constraints: list[ConstraintOut]
    excluded: dict[str, int]
    empty_reason: str | None
    relax: list[RelaxHintOut]
    fleet_silent: bool
    throughput_plan: ThroughputPlanOut | None
    listing: ListingOut
    data_as_of: str
    newest_report: str | None
    oldest_report: str | None


class ErrorOut(Schema):
    errors: dict[str, str]


class ModelOut(Schema):
    slug: str
    name: str
    kind: str
    workloads: list[str]
    group: str
    parameters: int | None
    active_parameters: int | None
    parameters_published: str
    precisions: list[dict]
    license: str
    config_url: str
    figures: dict
    missing: list[str]


def _query(request: HttpRequest) -> WorkloadQuery:
    return parse_query(request.GET)


@api.exception_handler(QueryError)
def query_error(request, exc: QueryError):
    return api.create_response(request, {"errors": exc.errors}, status=400)


@api.exception_handler(Throttled)
def throttled(request, exc: Throttled):
    # ninja adds Retry-After from the throttle's wait.
    return api.create_response(request, {"errors": {"request": throttled_message(exc.wait)}}, status=429)


@api.exception_handler(OperationalError)
@api.exception_handler(InterfaceError)
def database_unavailable(request, exc):
    log_database_unavailable(request, exc)
    return database_unavailable_json()


@api.exception_handler(Exception)
def unexpected_error(request, exc: Exception):
    # Any error no handler above takes: logged with its traceback, answered in the API's shape.
    log_unexpected(request, exc)
    return server_error_json()


@api.exception_handler(NinjaValidationError)
def ninja_validation_error(request, exc: NinjaValidationError):
    errors = {}
    for error in exc.errors:
        location = [str(part) for part in error.get("loc", ()) if part not in ("query", "params")]
        errors[".".join(location) or "request"] = error.get("msg") or gettext("Invalid value.")
    return api.create_response(request, {"errors": errors}, status=400)


@api.get("/estimate", response={200: MemoryOut, 400: ErrorOut, 429: ErrorOut}, url_name="estimate")
def estimate(request, params: Query[WorkloadParams]):
    """The GPU memory a workload needs, item by item (the `estimate --json` object)."""
    breakdown, _ = database.replica_first(lambda: estimate_for(_query(request)))
    return breakdown.as_dict()


@api.get(
    "/recommendations",
    response={200: RecommendationsOut, 400: ErrorOut, 429: ErrorOut},
    url_name="recommendations",
)
def recommendations(request, params: Query[PreferenceParams]):
    """The whole result: memory, machines cheapest first (or by `sort`, filtered by `gpu`,
    `min_memory_gib` and `confidence`, grouped by `group=gpu`, one `page` of `limit` at a time),
    alternatives and constraints applied. `sort=price_per_million_tokens` orders by the price per
    million tokens at the speed measured on each machine; with `target_tokens` (and `efficiency`,
    default 75, and `redundancy`, default 1) the answer carries the throughput plan: the cheapest, and
    with `gpu_plans=1` also the cheapest on each of the GPU types that serve tokens cheapest."""
    answer = database.replica_first(lambda: recommendation_for(_query(request), default_limit=API_LIMIT))
    payload = recommendation_payload(answer)
    # The payload is built to the schema (the schema tests check every answer against it); checking it
    # again field by field on every request cost a fifth of the answer with a hundred machines.
    return api.create_response(request, payload, status=200)


@api.get("/models", response={200: list[ModelOut], 400: ErrorOut, 429: ErrorOut}, url_name="models")
def models(request, workload: str | None = None):
    """The catalog's models, optionally only those that suit a workload."""
    if workload not in (None, "", *WIZARD_CODES):
        raise QueryError({"workload": gettext("Choose %(codes)s or %(last)s.") % {
            "codes": ", ".join(WIZARD_CODES[:-1]), "last": WIZARD_CODES[-1]
        }})
    return database.replica_first(lambda: model_listing(workload or None))


def recommendation_payload(result) -> dict:
    payload = result.recommendation.to_dict()
    payload["throughput_plan"] = result.throughput.to_dict() if result.throughput is not None else None
    payload["listing"] = result.listing.to_dict()
    for hint in payload["relax"]:
        hint["query"] = result.relax_query(hint["changes"])
    freshness = result.freshness
    payload["data_as_of"] = freshness["as_of"].isoformat()
    payload["newest_report"] = freshness["newest"].isoformat() if freshness.get("newest") else None
    payload["oldest_report"] = freshness["oldest"].isoformat() if freshness.get("oldest") else None
    return payload
