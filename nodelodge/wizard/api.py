"""JSON API: the wizard's answers for scripts. Same query string, same code, same result."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from csp.decorators import csp_update
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse
from django.utils import timezone
from django.utils.translation import gettext
from ninja import Field, NinjaAPI, Query, Schema, Swagger
from ninja.errors import AuthenticationError, HttpError, Throttled
from ninja.errors import ValidationError as NinjaValidationError
from ninja.parser import Parser
from ninja.renderers import JSONRenderer
from pydantic import TypeAdapter, create_model

from catalog import database
from catalog.markets import Market
from catalog.models import GpuType
from nodelodge.hardening.api_auth import CsrfRefused
from nodelodge.hardening.api_input import field_errors
from nodelodge.hardening.deadline import DeadlinePassed, deadline_passed_response, slots_taken_response
from nodelodge.hardening.errors import (
    BODY_NOT_JSON_MESSAGE,
    CSRF_MESSAGE,
    NOT_SIGNED_IN_MESSAGE,
    api_error,
    log_unexpected,
    server_error_json,
)
from nodelodge.hardening.faults import database_unavailable_json, log_database_unavailable
from nodelodge.hardening.slots import SlotsTaken
from nodelodge.hardening.throttling import ApiRateThrottle, throttled_message
from nodelodge.recommendations.answer import recommendation_for
from nodelodge.recommendations.capacity import CAPACITY_DEFAULTS, CapacityForm, capacity_for, parse_capacity
from nodelodge.recommendations.clusters import clusters_payload
from nodelodge.recommendations.estimate import estimate_for
from nodelodge.recommendations.model_choices import model_listing
from nodelodge.recommendations.parameters import BY_NAME, ENGINE_VERSION, ESTIMATE_PARAMETERS, PARAMETERS
from nodelodge.recommendations.query import (
    Conflict,
    NotFound,
    QueryError,
    WorkloadQuery,
    normalize_query,
    parameter_schema,
    parse_query,
)
from nodelodge.refresh.selectors import gpu_history_paths, gpu_type_history, history_document
from sizing import i18n
from sizing.limits import API_LIMIT
from sizing.workloads import WIZARD_CODES

from . import conditional as answer_http
from .api_schemas import (
    CapacityOut,
    ErrorOut,
    GgufCapacityOut,
    GpuHistoryOut,
    MemoryOut,
    ModelOut,
    RecommendationsOut,
    SglangCapacityOut,
)
from .history_page import HistoryFilterForm


class ConsoleParser(Parser):
    """Query strings as the page reads them: a repeated `countries` is one list, comma-joined
    (`query.normalize_query`); any other repeated parameter, the last value, as Django's."""

    def parse_querydict(self, data, list_fields, request):
        result = super().parse_querydict(data, list_fields, request)
        if "countries" in data and "countries" not in list_fields:
            result["countries"] = normalize_query(data)["countries"]
        return result


class ConsoleSwagger(Swagger):
    """Swagger UI in the console's frame (a language, a main landmark, the way back, readable
    colours); its operations are not deep links, which Swagger UI nests inside their buttons."""

    template = "wizard/api_docs.html"


class ConsoleRenderer(JSONRenderer):
    """JSON by orjson: an answer of a hundred machines (200 KB) in a tenth of a millisecond instead of
    nearly two. Values orjson does not write itself (dates and times among them, so they read as
    before) go through ninja's encoder; a value orjson refuses (an integer past 64 bits) sends the
    whole answer through Python's json, as before."""

    def render(self, request, data: Any, *, response_status: int) -> Any:
        try:
            return orjson.dumps(data, default=self._encoder.default, option=orjson.OPT_PASSTHROUGH_DATETIME)
        except orjson.JSONEncodeError:
            return super().render(request, data, response_status=response_status)

    _encoder = JSONRenderer.encoder_class()


class ConsoleAPI(NinjaAPI):
    """The API, whose schema states what each parameter accepts as the console reads it
    (`query.parameter_schema`): the parameters are read as text and checked by the console's own
    rules, so each bad value gets a 400 naming its field in the console's words."""

    def get_openapi_schema(self, *args, **kwargs):
        schema = super().get_openapi_schema(*args, **kwargs)
        for path, operation in schema.get("paths", {}).items():
            for parameter in operation.get("get", {}).get("parameters", []):
                name = parameter["name"]
                if path.endswith("/models") and name == "workload":
                    parameter["schema"] = {"type": "string", "enum": [*WIZARD_CODES, ""]}
                elif path.endswith("/capacity") and name in CapacityForm.base_fields:
                    # Every what-if setting has a default, which a value left out or empty takes.
                    stated = parameter_schema(name, CapacityForm, empty_is_default=True)
                    parameter["schema"] = _with_default(stated, CAPACITY_DEFAULTS.get(name))
                elif name in BY_NAME and not path.endswith("/history"):
                    # The query's parameters; a GPU type's history has a market parameter of its own
                    # (the markets its prices are kept in), stated by its own schema.
                    parameter["schema"] = _with_default(parameter_schema(name), BY_NAME[name].default)
        return schema


def _with_default(stated: dict, default: str | None) -> dict:
    """The parameter's schema with its default as JSON writes it (24, not "24")."""
    if default is None:
        return stated
    kind = stated.get("type") or stated["anyOf"][0]["type"]
    as_json: dict[str, Callable[[str], object]] = {"integer": int, "number": _number}
    return {**stated, "default": as_json.get(kind, str)(default)}


def _number(text: str) -> int | float:
    """A default as JSON writes the number: 24, not 24.0."""
    return int(text) if text.isdigit() else float(text)


api = ConsoleAPI(
    title="Node Lodge console API",
    version="1",
    description=(
        "GPU memory estimates and machine recommendations for a workload. Parameters are the "
        "wizard's query string. Sizes are bytes and GiB (2^30 bytes); money is USD as decimal strings."
    ),
    urls_namespace="api",
    parser=ConsoleParser(),
    renderer=ConsoleRenderer(),
    throttle=[ApiRateThrottle()],
    # Swagger UI (served from ninja's own static files) draws its icons from data: URIs; only the
    # docs page gets that allowance, scripts and styles stay 'self'-only there too.
    docs_decorator=csp_update({"img-src": ["data:"]}),
    docs=ConsoleSwagger(settings={"deepLinking": False}),
)


# The signed-in user's watches (nodelodge/watches/api.py).
api.add_router("/watches", "nodelodge.watches.api.router")
# Booking a cluster or a throughput plan, all or nothing (nodelodge/launches/api.py).
api.add_router("/launches", "nodelodge.launches.api.router")


def params_schema(name: str, parameters, doc: str | None) -> type[Schema]:
    """The operation's query parameters, made from the inputs' declarations (`parameters.PARAMETERS`):
    each read as text (a query string's value always is, so this schema refuses nothing) with the default
    and the description declared. The console's own rules check the values (`query.parse_query`): one
    check, whose 400 names the field in the console's words; the schema's OpenAPI entry states those
    rules (`ConsoleAPI`)."""
    fields: dict[str, Any] = {
        parameter.name: (str | None, Field(parameter.default, description=parameter.description or None))
        for parameter in parameters
    }
    return create_model(name, __base__=Schema, __doc__=doc, **fields)


WorkloadParams = params_schema("WorkloadParams", ESTIMATE_PARAMETERS, (
    "Every parameter is read as text and validated by the console's own rules, so a bad value\n"
    "gets a 400 naming its field rather than a generic validation error. A parameter left out takes\n"
    "the default the schema names, as on the page and in the commands (`query.DEFAULTS`)."
))
PreferenceParams = params_schema("PreferenceParams", PARAMETERS, None)


def _query(params: Schema) -> WorkloadQuery:
    """The query from the parameters ninja read (those the request gave; repeated countries joined by
    `ConsoleParser`), checked once, by the console's rules, as the page's and the commands' are."""
    return parse_query(params.model_dump(exclude_unset=True))


class CapacityParams(Schema):
    """The GPU what-if: one GPU type's memory and vLLM's settings. Left out, a parameter takes the
    default the schema names (an H100 80GB's 79.19 GiB, vLLM's own defaults otherwise)."""

    model: str | None = CAPACITY_DEFAULTS["model"]
    precision: str | None = CAPACITY_DEFAULTS["precision"]
    kv_cache: str | None = CAPACITY_DEFAULTS["kv_cache"]
    engine: str | None = CAPACITY_DEFAULTS["engine"]
    gpu: str | None = Field(None, description="A catalog GPU type by name: gpu_memory_gib becomes the memory "
                            "CUDA reports for it (measured where the catalog records it, else nvidia-smi's "
                            "figure less the 469 MiB the driver keeps).")
    gpu_memory_gib: str | None = Field(CAPACITY_DEFAULTS["gpu_memory_gib"],
                                       description="One GPU's total memory as CUDA reports it, GiB.")
    tensor_parallel: str | None = CAPACITY_DEFAULTS["tensor_parallel"]
    pipeline_parallel: str | None = CAPACITY_DEFAULTS["pipeline_parallel"]
    gpu_memory_utilization: str | None = Field(
        None, description="vLLM: any fraction in (0, 1]. Default: the release's, 0.92 from 0.20 (0.9 "
        "before); the answer names the one sized.")
    max_model_len: str | None = Field(None, description="Default: the model's longest context.")
    max_num_batched_tokens: str | None = CAPACITY_DEFAULTS["max_num_batched_tokens"]
    engine_version: str | None = Field(None, description=ENGINE_VERSION.description)
    cudagraph_estimate: str | None = Field(
        None, description="vLLM 0.20 on: on (the default) counts the CUDA graphs' estimate inside "
        "gpu_memory_utilization; off is vLLM's VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 (set on the "
        "command). Before 0.20 the graphs are outside the budget (on is refused); before 0.29 the V2 model "
        "runner estimates none (on is refused with model_runner v2).")
    model_runner: str | None = Field(None, description=BY_NAME["model_runner"].description)
    skip_vision_tower: str | None = Field(
        None, description="vLLM from 0.10.1, a model with a vision tower: on leaves the tower unloaded "
        "(--limit-mm-per-prompt '{\"image\": 0}' on the command) and its weights out of the budget; off "
        "(the default) loads it.")
    interconnect: str | None = Field(None, description=BY_NAME["interconnect"].description)
    max_num_seqs: str | None = Field(
        None, description="Default: vLLM's, 1024 on GPUs of 70 GiB or more, else 256.")
    quantization: str | None = Field(
        None, description="llama.cpp and Ollama: the GGUF quant type of the file (Q4_K_M by default, Q8_0, "
        "IQ4_XS, F16…).")
    flash_attention: str | None = Field(None, description="llama.cpp and Ollama: on (the default) or off.")
    parallel: str | None = Field(
        None, description="llama.cpp and Ollama: requests served at once (-np, OLLAMA_NUM_PARALLEL; "
        "default 1); SGLang: --max-running-requests (default SGLang's own).")
    mem_fraction_static: str | None = Field(
        None, description="SGLang: the share of the memory free at start for the weights and the token "
        "pool, any fraction in (0, 1); default SGLang's for the GPU's memory and tensor_parallel.")
    gpu_layers: str | None = Field(
        None, description="llama.cpp and Ollama: decoder layers on the GPUs (-ngl); default all and the "
        "head.")
    kv_unified: str | None = Field(
        None, description="llama.cpp: on runs llama-server with --kv-unified, one KV pool the parallel slots "
        "share (each request may take up to max_model_len of it); default off, a stream per slot from build "
        "b5913.")


@api.exception_handler(QueryError)
def query_error(request, exc: QueryError):
    return api.create_response(request, {"errors": exc.errors}, status=400)


@api.exception_handler(NotFound)
def not_found(request, exc: NotFound):
    # What the schema cannot state, since it depends on the catalog or on other fields, names nothing
    # when it fails: a model the catalog does not hold for the workload, a page past the list's window
    # (page × limit within the cheapest 1,000, `listing.PAGE_WINDOW`). 404, in words, documented.
    return api.create_response(request, {"errors": exc.errors}, status=404)


@api.exception_handler(Conflict)
def conflict(request, exc: Conflict):
    # Values the schema allows each on its own that do not go together (a throughput plan for a model
    # that serves no tokens; a precision, context or size the chosen model cannot take; a model or
    # memory left empty that the workload needs): 422, in words.
    return api.create_response(request, {"errors": exc.errors}, status=422)


@api.exception_handler(Throttled)
def throttled(request, exc: Throttled):
    # ninja adds Retry-After from the throttle's wait.
    return api.create_response(request, {"errors": {"request": throttled_message(exc.wait)}}, status=429)


@api.exception_handler(DeadlinePassed)
def past_deadline(request, exc: DeadlinePassed):
    # The request outlasted its deadline (nodelodge/hardening/deadline.py): 503, Retry-After, nothing changed.
    return deadline_passed_response(request)


@api.exception_handler(SlotsTaken)
def slots_taken(request, exc: SlotsTaken):
    # Every plan-search slot is taken (nodelodge/hardening/slots.py): 503 at once, Retry-After.
    return slots_taken_response(request)


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
    # What the schema does not allow (a body's field of the wrong type, a choice it does not list, a
    # field it does not name): 400 naming each field, in words (`hardening/api_input.py`).
    return api.create_response(request, {"errors": field_errors(exc.errors)}, status=400)


@api.exception_handler(AuthenticationError)
def not_signed_in(request, exc: AuthenticationError):
    return api_error(401, "auth", NOT_SIGNED_IN_MESSAGE)


@api.exception_handler(CsrfRefused)
def csrf_refused(request, exc: CsrfRefused):
    return api_error(403, "csrf", CSRF_MESSAGE)


@api.exception_handler(HttpError)
def http_error(request, exc: HttpError):
    # ninja's own refusals. The one it raises itself is a body it cannot parse (400, its cause the
    # parser's error); any other keeps its status, worded under `request`.
    if exc.status_code == 400 and exc.__cause__ is not None:
        return api_error(400, "body", BODY_NOT_JSON_MESSAGE)
    return api.create_response(request, {"errors": {"request": str(exc)}}, status=exc.status_code)


def _answered(request, operation: str, payload) -> HttpResponse:
    """The operation's answer (`payload()`: its JSON value), served again while the fleet state lasts
    (`conditional`): 304 for the client's own copy, the cache's copy of a hot answer, else computed.
    The state is read on the connection the answer reads (the replica's inside `replica_first`)."""

    def answer():
        conditional = answer_http.for_api(request, operation)
        if conditional is None:
            return api.create_response(request, payload(), status=200)
        if conditional.matches(request):
            return conditional.not_modified()
        stored = conditional.stored()
        if stored is None:
            response = api.create_response(request, payload(), status=200)
            conditional.store((response.content, response["Content-Type"]))
        else:
            response = HttpResponse(stored[0], content_type=stored[1])
        return conditional.stamp(response)

    return database.replica_first(answer)


def _validated(schema, value):
    """`value` as the schema writes it (fields it does not name dropped), as ninja's own check does."""
    adapter = TypeAdapter(schema)
    return adapter.dump_python(adapter.validate_python(value), mode="json")


@api.get(
    "/estimate",
    response={200: MemoryOut, 304: None, 400: ErrorOut, 404: ErrorOut, 422: ErrorOut, 429: ErrorOut,
              503: ErrorOut},
    url_name="estimate",
)
def estimate(request, params: Query[WorkloadParams]):
    """The GPU memory a workload needs, item by item (the `estimate --json` object)."""
    return _answered(
        request, "estimate", lambda: _validated(MemoryOut, estimate_for(_query(params))[0].as_dict())
    )


@api.get(
    "/recommendations",
    # 503 with a Retry-After: past the request's deadline, or every slot for dear answers taken.
    response={200: RecommendationsOut, 304: None, 400: ErrorOut, 404: ErrorOut, 422: ErrorOut, 429: ErrorOut,
              503: ErrorOut},
    url_name="recommendations",
)
def recommendations(request, params: Query[PreferenceParams]):
    """The whole result: memory, machines cheapest first (or by `sort`, filtered by `gpu`,
    `min_memory_gib` and `confidence`, grouped by `group=gpu`, one `page` of `limit` at a time),
    alternatives and constraints applied. `sort=price_per_million_tokens` orders by the price per
    million tokens at the speed measured on each machine; with `target_tokens` (and `efficiency`,
    default 75, and `redundancy`, default 1) the answer carries the throughput plan: the cheapest, and
    with `gpu_plans=1` also the cheapest on each of the GPU types that serve tokens cheapest. For a language
    model served for inference, `clusters` lists the cheapest clusters of identical machines at one site
    (one per site, at most 10) that hold it under vLLM, tensor parallel within a machine and pipeline
    parallel across machines, with each GPU's items in bytes and GiB, the commands and the budget's
    cover: when no single machine fits (`clusters=auto`, the default) or always (`clusters=show`)."""
    # The payload is built to the schema (the schema tests check every answer against it); checking it
    # again field by field on every request cost a fifth of the answer with a hundred machines.
    def payload() -> dict:
        # Its rows are worded after the answer too: in one language, each message asked once.
        with i18n.words_remembered():
            return recommendation_payload(
                recommendation_for(_query(params), default_limit=API_LIMIT, shed_when_busy=True)
            )

    return _answered(request, "recommendations", payload)


@api.get(
    "/capacity",
    response={200: CapacityOut | SglangCapacityOut | GgufCapacityOut, 400: ErrorOut, 404: ErrorOut,
              422: ErrorOut, 429: ErrorOut, 503: ErrorOut},
    url_name="capacity",
)
def capacity(request, params: Query[CapacityParams]):
    """The GPU what-if: whether vLLM starts with this model on GPUs of this memory, its budget item by
    item (weights, activation peak, memory outside PyTorch; the CUDA context and graphs outside it), the
    KV cache it leaves in GiB and in tokens, the requests of `max_model_len` it holds at once, and the
    `vllm serve` command. With engine=llamacpp or engine=ollama: the model's GGUF file in `quantization`,
    its weights on the GPUs (`-ngl`) and in host memory, the KV cache in its type shared by the `parallel`
    slots, the compute buffer, whether it starts, how many layers fit where all do not, and the
    `llama-server` command or Ollama's settings. With engine=sglang: the weights and the token pool inside
    `mem_fraction_static` of the memory free at start, the pool in tokens (`max_total_num_tokens`), what is
    left for activations and CUDA graphs, the requests of `max_model_len` (--context-length) at once and the
    `python -m sglang.launch_server` command."""
    return database.replica_first(lambda: capacity_for(parse_capacity(params.model_dump(exclude_unset=True))))


@api.get(
    "/models", response={200: list[ModelOut], 304: None, 400: ErrorOut, 429: ErrorOut, 503: ErrorOut},
    url_name="models"
)
def models(request, workload: str | None = None):
    """The catalog's models, optionally only those that suit a workload."""
    if workload not in (None, "", *WIZARD_CODES):
        raise QueryError({"workload": gettext("Choose %(codes)s or %(last)s.") % {
            "codes": ", ".join(WIZARD_CODES[:-1]), "last": WIZARD_CODES[-1]
        }})
    return _answered(request, "models", lambda: _validated(list[ModelOut], model_listing(workload or None)))


class HistoryParams(Schema):
    market: str | None = Field(None, description="on_demand (the default), interruptible or reserved.",
                               json_schema_extra={"enum": [*Market.values, ""]})
    country: str | None = Field(None, description="ISO 3166 alpha-2 code; empty for every country.")


@api.get(
    "/gpu-types/{slug}/history",
    response={200: GpuHistoryOut, 400: ErrorOut, 404: ErrorOut, 429: ErrorOut, 503: ErrorOut},
    url_name="gpu_history",
)
def gpu_history(request, slug: str, params: Query[HistoryParams]):
    """A GPU type's price and stock history over the last 30 days, hour by hour, in one market and
    country (or every country): the cheapest and median price per GPU-hour, offers seen and in stock,
    and the refreshes that saw stock of those counted. At most 720 hours per answer (30 × 24), however
    much history is kept; the countries with history are listed for the filter."""
    form = HistoryFilterForm({"market": params.market or "", "country": params.country or ""})
    if not form.is_valid():
        raise QueryError(form.errors_by_field())

    def answer():
        gpu_type = GpuType.objects.filter(slug=slug).first()
        if gpu_type is None:
            raise NotFound({"slug": gettext("No GPU type has the slug “%(slug)s”.") % {"slug": slug}})
        history = gpu_type_history(gpu_type, market=form.cleaned_data["market"],
                                   country=form.cleaned_data["country"], now=timezone.now())
        return history_document(history)

    return database.replica_first(answer)


def recommendation_payload(result) -> dict:
    payload = result.recommendation.to_dict()
    payload["throughput_plan"] = result.throughput.to_dict() if result.throughput is not None else None
    payload.update(clusters_payload(result))
    payload["listing"] = result.listing.to_dict()
    rows = payload["machines"] + payload["alternatives"]
    history_paths = gpu_history_paths((*result.recommendation.machines, *result.recommendation.alternatives))
    for row in rows:
        row["gpu_history_url"] = history_paths.get(row["gpu_type"])
    for hint in payload["relax"]:
        hint["query"] = result.relax_query(hint["changes"])
    freshness = result.freshness
    payload["data_as_of"] = freshness["as_of"].isoformat()
    payload["newest_report"] = freshness["newest"].isoformat() if freshness.get("newest") else None
    payload["oldest_report"] = freshness["oldest"].isoformat() if freshness.get("oldest") else None
    return payload
