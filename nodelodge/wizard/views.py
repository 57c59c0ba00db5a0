"""The wizard: one page. With a query it renders the result; an HTMX request gets only the
partial its target names, and the full page renders the same partials."""
from __future__ import annotations

import functools
import re
from typing import Any, cast
from urllib.parse import urlencode

from django import forms
from django.http import HttpResponse, QueryDict
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.functional import SimpleLazyObject
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET
from django_htmx.http import push_url, reswap, retarget

from catalog import database
from catalog.markets import Market
from catalog.models import GpuType
from nodelodge.field_values import FieldValues
from nodelodge.hardening.page_limit import page_rate_limited
from nodelodge.recommendations.answer import recommendation_for
from nodelodge.recommendations.capacity import (
    CAPACITY_DEFAULTS,
    capacity_for,
    engine_refusals,
    gpu_choices,
    language_model_choices,
    settings_refusals,
    with_capacity_defaults,
    with_usable_memory,
)
from nodelodge.recommendations.capacity import query_from as capacity_query_from
from nodelodge.recommendations.clusters import ClusterOffer, cluster_machine_ids, cluster_offer_of
from nodelodge.recommendations.messages import error_list, field_labels, messages_for, reworded
from nodelodge.recommendations.model_choices import model_row, precision_options, suits
from nodelodge.recommendations.one_machine import MachineAnswer, id_in_address, machine_answer
from nodelodge.recommendations.parameters import TRAINING_PARAMETERS
from nodelodge.recommendations.query import (
    DEFAULTS,
    WORKLOAD_CHOICES,
    QueryError,
    WorkloadQuery,
    WorkloadQueryForm,
    parse_query,
    with_defaults,
)
from nodelodge.recommendations.sorts import CONFIDENCE_FILTERS, GROUPS, SORT_CHOICES
from nodelodge.refresh.selectors import gpu_history_paths, gpu_type_history
from sizing import i18n
from sizing.calculators import gpus_for_throughput, rule_of_thumb
from sizing.calculators.llamacpp_builds import OLLAMA_PER_SLOT_FROM, PER_SLOT_FROM, STREAMS_FROM
from sizing.calculators.vllm import VLLM_VERSION
from sizing.countries import country_name
from sizing.limits import MAX_LIMIT, PAGE_MAX_LIMIT
from sizing.results import machine_row
from sizing.training import CHOICES as TRAINING_CHOICES
from sizing.training import PRESET_NAMES, PRESETS
from sizing.units import figure_text
from sizing.workloads import workload as workload_named

from . import conditional as answer_http
from .forms import CapacityPageForm, RuleOfThumbForm, ThroughputForm
from .history_page import HistoryFilterForm, country_choices, draw
from .machine_rows import machine_detail
from .model_display import model_choice, model_choices
from .result_page import PLAN_ROWS_SHOWN, ResultPage
from .rows import add_cluster_words, add_row_words, what_if_query

# hx-target id → partial of wizard/wizard.html
HTMX_PARTIALS = {"result": "result", "model-list": "model-list", "wizard": "wizard"}
# What an HTMX partial's response says besides its body (kept with it to serve again).
HTMX_HEADERS = ("HX-Push-Url", "HX-Retarget", "HX-Reswap")


def _split_countries(countries: str) -> tuple[bool, str]:
    codes = [c.strip() for c in countries.split(",") if c.strip()]
    eu = any(code.upper() == "EU" for code in codes)
    return eu, ", ".join(code for code in codes if code.upper() != "EU")


# The query form's own figures: the model field's length and the choices of its choice fields.
def _model_slug_length() -> int:
    return cast(int, cast(forms.CharField, WorkloadQueryForm.base_fields["model"]).max_length)


def _choices(name: str) -> Any:
    return cast(forms.ChoiceField, WorkloadQueryForm.base_fields[name]).choices


def _slug_to_look_up(slug: str | None) -> str | None:
    """The typed model slug, when it can be one: a NUL byte cannot be sent to PostgreSQL at all (the
    form reports it as an error), and no slug is longer than the form allows."""
    if not slug or "\x00" in slug or len(slug) > _model_slug_length():
        return None
    return slug


def _form_values(params) -> tuple[dict[str, str], object | None]:
    """What the form shows: the query as given, defaults for what is left out, and a model
    that suits the workload (switching workload swaps in that workload's default model; an
    unknown slug stays, so the form can say so); and that model's catalog row, if any."""
    values = with_defaults({key: params.get(key) for key in params})
    values["countries"] = ",".join(c for c in params.getlist("countries") if c)
    workload = values["workload"]
    row = model_row(_slug_to_look_up(values.get("model")), workload)
    own_model = getattr(workload_named(workload), "default_model", None)
    if own_model is not None and row is not None and not suits(row, workload):
        values["model"] = own_model
        row = model_row(values["model"], workload)
        # A precision chosen for the other workload's model (QLoRA's 4-bit) does not carry over to
        # the model swapped in: it starts at its own first precision offered (16-bit where it can).
        if row is not None:
            offered = [p["value"] for p in precision_options(row) if p["available"]]
            values["precision"] = str(offered[0]) if offered else DEFAULTS["precision"]
    return values, row


def training_choices() -> dict[str, list[tuple[str, str]]]:
    """Each fine-tuning choice's codes with their words in the page's language."""
    return {field: [(code, words[code]) for code in words] for field, words in TRAINING_CHOICES.items()}


def training_rows(values: dict, errors: dict, field_messages: dict) -> list[dict]:
    """The fine-tuning inputs as the page lays them out (each declaration's `place`, a row side by side
    where one says `inline`); an input read at one precision only (the 4-bit base) at that one only."""
    choices = training_choices()
    rows: dict[int, dict] = {}
    for parameter in sorted(TRAINING_PARAMETERS, key=lambda p: p.place or (0, 0)):
        if parameter.at_precision is not None and str(values.get("precision")) != str(parameter.at_precision):
            continue
        row = rows.setdefault((parameter.place or (0, 0))[0], {"inline": False, "inputs": []})
        row["inline"] = row["inline"] or parameter.inline
        row["inputs"].append({
            "name": parameter.name, "label": parameter.label, "kind": parameter.kind,
            "choices": choices.get(parameter.name, parameter.choices), "value": values.get(parameter.name),
            "error": errors.get(parameter.name, ""), "messages": field_messages.get(parameter.name, {}),
            "help": parameter.page_help,
        })
    return [rows[number] for number in sorted(rows)]


def training_presets(values: dict) -> list[dict]:
    """Links that fill the fine-tuning fields as a trainer runs by default, the rest of the form kept."""
    kept = {key: value for key, value in values.items()
            if value not in (None, "") and key not in ("shown", "q")}
    presets = []
    for code, preset in PRESETS.items():
        # a preset fills the trainer's choices; the base's format is the checkpoint's and stays as chosen
        filled = {**kept, **{name: str(value) for name, value in preset.trainer_values().items()}}
        current = all(str(values.get(name)) == str(value) for name, value in preset.trainer_values().items())
        presets.append({"name": PRESET_NAMES[code], "href": reverse("wizard:start") + "?" + urlencode(filled),
                        "current": current})
    return presets


def _public_query(params) -> str:
    """The query as typed, without the form's bookkeeping fields (search box, labels shown)."""
    public = params.copy()
    for key in ("shown", "q"):
        public.pop(key, None)
    return public.urlencode()


@require_GET
@page_rate_limited
@database.reads_replica_first
def wizard(request):
    """The page, or the HTMX partial its target names; served again while the fleet state lasts
    (`conditional`: a 304 for the client's own copy, else the cache's copy of a hot answer)."""
    partial = HTMX_PARTIALS.get(request.htmx.target) if request.htmx else None
    conditional = answer_http.for_page(request, partial)
    if conditional is None:
        return _wizard_answer(request, partial)[0]
    if conditional.matches(request):
        return conditional.not_modified()
    stored = conditional.stored()
    if stored is None:
        response, stored = _wizard_answer(request, partial)
        conditional.store(stored)
    else:
        response = _wizard_response(request, partial, stored)
    return conditional.stamp(response)


# A partial is kept for every client who asks the same (`conditional`), but its watch form carries the
# CSRF token of the client it was made for: kept without it, and each client's own written in when served.
CSRF_FIELD = re.compile(r'(<input type="hidden" name="csrfmiddlewaretoken" value=")[^"]*(")')
CSRF_KEPT = r"\g<1>\g<2>"


def without_client_token(html: str) -> str:
    """A partial as it is kept for every client: its forms' CSRF token left empty."""
    return CSRF_FIELD.sub(CSRF_KEPT, html)


def with_client_token(request, html: str) -> str:
    """A kept partial with this client's CSRF token in its forms (a new mask of the client's secret, as
    `{% csrf_token %}` writes it; the client's cookie is set where it has none yet)."""
    if "csrfmiddlewaretoken" not in html:
        return html
    token = get_token(request)
    return CSRF_FIELD.sub(lambda found: found.group(1) + token + found.group(2), html)


def _wizard_response(request, partial: str | None, stored: dict) -> HttpResponse:
    """The response from what an answer keeps: a partial whole, with its HTMX headers; for the whole
    page, its `#wizard` part, rendered into the page with this client's top bar."""
    if partial is not None:
        response = HttpResponse(with_client_token(request, stored["html"]))
        for name, value in stored["headers"].items():
            response[name] = value
        return response
    return render(request, "wizard/wizard.html", {
        "wizard_html": stored["wizard_html"],  # the #wizard partial, rendered (escaped) by this template
        "page_address": stored["page_address"],
    })


def page_query(values) -> WorkloadQuery:
    """The query as the page reads it: the API's, with at most PAGE_MAX_LIMIT machines a page."""
    query = parse_query(values, get_language())
    if query.limit is not None and query.limit > PAGE_MAX_LIMIT:
        raise QueryError({"limit": _(
            "The page lists at most %(most)s machines per page; the API lists up to %(api)s."
        ) % {"most": PAGE_MAX_LIMIT, "api": figure_text(MAX_LIMIT)}})
    return query


def wizard_page_with(request, extra: dict) -> HttpResponse:
    """The whole page for request.GET's query, never stored, with `extra` in its context: a form
    posted elsewhere (a watch) shown again beside the result with its errors and values."""
    return _wizard_answer(request, None, extra)[0]


def _wizard_answer(request, partial: str | None, extra: dict | None = None) -> tuple[HttpResponse, dict]:
    """Computes the answer: the response, and what it keeps to serve again (`_wizard_response`)."""
    # The answer and its rows' words in the page's one language, each message asked once.
    with i18n.words_remembered():
        return _worded_answer(request, partial, extra)


def _worded_answer(request, partial: str | None, extra: dict | None) -> tuple[HttpResponse, dict]:
    params = request.GET
    values, row = _form_values(params)
    # An unknown workload is reported by the form; the page still shows the default steps.
    workload = values["workload"] if values["workload"] in dict(WORKLOAD_CHOICES) else DEFAULTS["workload"]
    result, errors = None, {}
    if "workload" in params:
        try:
            # Numbers as the page's language writes them: 12,50 and 1.000 on the German page.
            answer = recommendation_for(page_query(values), model_row=row, shed_when_busy=True)
        except QueryError as error:
            errors = error.errors
        else:
            every_plan_row = params.get("plan_rows") == "all"
            result = ResultPage(answer, plan_rows_shown=None if every_plan_row else PLAN_ROWS_SHOWN)
    if result is not None:
        grouped = dict(result.listing.groups) if result.query.group == "gpu" else None
        what_if = what_if_query(result.query)
        shown = (*result.recommendation.machines, *result.recommendation.alternatives)
        history_paths = gpu_history_paths(shown)
        add_row_words(result.data["machines"], grouped, what_if, history_paths)
        add_row_words(result.data["alternatives"], what_if=what_if, history_paths=history_paths)
        add_cluster_words(result.data["clusters"])

    search = (params.get("q") or "").strip()[:100]
    selected = model_choice(row)
    model_kind = selected["kind"] if selected else None
    eu_checked, other_countries = _split_countries(values["countries"])
    labels = field_labels(workload, model_kind)
    errors = {name: reworded(name, message, workload, model_kind) for name, message in errors.items()}
    context = {
        "values": FieldValues(values),
        "errors": FieldValues(errors),
        # The watch form's own (the watches view gives them where it shows the form again).
        "watch_values": FieldValues(),
        "watch_errors": FieldValues(),
        "error_list": error_list(errors, labels),
        # The form's parts are made when the template reaches the form: the result panel alone, swapped
        # in after a change, never shows them.
        "field_messages": SimpleLazyObject(lambda: messages_for(workload, model_kind)),
        "sorts": SORT_CHOICES,
        "groups": GROUPS,
        "confidence_filters": CONFIDENCE_FILTERS,
        "result": result,
        "workload": workload,
        "chosen_workload": workload_named(workload),  # what the form asks for it
        "workloads": WORKLOAD_CHOICES,
        "precisions": selected["precisions"] if selected else [
            {"value": int(value), "label": label, "available": True, "reason": ""}
            for value, label in _choices("precision")
        ],
        "kv_cache_precisions": _choices("kv_cache"),
        "training_presets": SimpleLazyObject(lambda: training_presets(values)),
        "engines": _choices("engine"),
        "quantizations": _choices("quantization"),
        "on_off": _choices("cudagraph_estimate"),
        "interconnects": _choices("interconnect"),
        "model_runners": _choices("model_runner"),
        "vllm_default_version": VLLM_VERSION,
        "llamacpp_per_slot_from": PER_SLOT_FROM,
        "llamacpp_streams_from": STREAMS_FROM,
        "ollama_per_slot_from": OLLAMA_PER_SLOT_FROM,
        "cluster_choices": _choices("clusters"),
        "tiers": _choices("tier"),
        "market_choices": _choices("market"),
        # Made when the template reaches the list: the result panel alone never shows it.
        "models": functools.partial(model_choices, workload, search),
        "model_kind": model_kind,
        "selected_model": selected,
        "labels": labels,
        "search": search,
        "eu_checked": eu_checked,
        "other_countries": other_countries,
        "query_string": result.query.as_query_string() if result else _public_query(params),
        **(extra or {}),
    }
    # What the form shows: its labels follow the workload and model kind, and its fields carry
    # error messages; when either changes, the whole wizard is sent rather than the result alone.
    context["training_rows"] = SimpleLazyObject(
        lambda: training_rows(values, errors, context["field_messages"])
    )
    context["shown"] = f"{workload}:{model_kind or ''}:{'invalid' if errors else 'ok'}"
    # A fine-tune at 4-bit also shows the base's format: switching the precision to or from 4 sends it.
    if context["chosen_workload"] is not None and context["chosen_workload"].takes_training \
            and str(values.get("precision")) == "4":
        context["shown"] += ":4-bit"
    # The page's own address in canonical form (dot decimals, the plan's every machine when listed):
    # the address bar after a swap, and what the language switch carries, so "180.000" typed on the
    # German page is 180,000 on the English one too.
    if "workload" in params:
        every_row = "&plan_rows=all" if result is not None and result.plan_rows_shown is None else ""
        context["page_address"] = reverse("wizard:start") + "?" + context["query_string"] + every_row
    swap_target = None
    if partial is not None:
        # The form says which labels it shows; when the new model needs others (a speech model's
        # audio streams), the whole wizard is sent instead of the result alone.
        if partial == "result" and params.get("shown") != context["shown"]:
            partial, swap_target = "wizard", "#wizard"
        # The result alone also updates the "Selected" line of the form, out of band.
        context["oob"] = partial == "result"
        # Errors render beside their fields with 200, as a re-shown form does (htmx swaps only 2xx).
        response = HttpResponse(render_to_string(f"wizard/wizard.html#{partial}", context, request))
        if swap_target:
            response = reswap(retarget(response, swap_target), "outerHTML")
        if "workload" in params and request.htmx.target != "model-list":
            # The address bar shows the canonical query, without the form's bookkeeping fields.
            response = push_url(response, context["page_address"])
        headers = {name: response[name] for name in HTMX_HEADERS if name in response}
        return response, {"html": without_client_token(response.content.decode()), "headers": headers}
    # The whole page is its #wizard part inside the page's frame, which shows the client's own top bar.
    stored = {
        "wizard_html": render_to_string("wizard/wizard.html#wizard", context, request),
        "page_address": context.get("page_address"),
    }
    response = _wizard_response(request, None, stored)
    if request.htmx and "workload" in params:
        response = push_url(response, context["page_address"])
    return response, stored


@require_GET
@page_rate_limited
@database.reads_replica_first
def cluster(request):
    """One cluster of an answer (`?<the answer's query>&machines=<ids>`): what each GPU holds, the
    assumptions, the confidence and the commands that start it, with its Launch cluster button. The
    Clusters panel loads the details part when a cluster is opened (HTMX); without JavaScript its link
    opens this page."""
    params = request.GET
    values, row = _form_values(params)
    problem = None
    offer: ClusterOffer | None = None
    machine_ids = cluster_machine_ids(params.get("machines", ""))
    try:
        query = parse_query(values, get_language())
    except QueryError as error:
        problem = " ".join(str(message) for message in error.errors.values())
    else:
        if machine_ids is None:
            problem = _("Name the cluster's machines by their ids: machines=12,34 (at least two).")
        else:
            found = cluster_offer_of(query, row, machine_ids)
            if isinstance(found, str):
                problem = found
            else:
                offer = found
    query_string = query.as_query_string() if problem is None else _public_query(params)
    context: dict[str, Any] = {"problem": problem, "query_string": query_string, "c": None}
    if offer is not None:
        [context["c"]] = [offer.to_dict()]
        add_cluster_words([context["c"]])
    status = 400 if problem else 200
    if request.htmx:
        return render(request, "wizard/cluster.html#detail", context, status=status)
    return render(request, "wizard/cluster.html", context, status=status)


@require_GET
@page_rate_limited
@database.reads_replica_first
def machine(request):
    """One machine of an answer (`?<the answer's query>&machine=<id>&gpus=<GPUs its row uses>`): its row
    as the answer writes it, with its details open (the command, why it fits, its limits, markets and
    measured speeds) and its Launch button. A row of the result panel loads the details part when opened
    (HTMX); without JavaScript its link opens this page. One machine is read, whatever is asked."""
    params = request.GET
    values, row = _form_values(params)
    context: dict[str, Any] = {"problem": None, "m": None, "notice": None}
    machine_id, gpus = id_in_address(params.get("machine")), params.get("gpus")
    shown_gpus = id_in_address(gpus, 4) if gpus is not None else None
    query: WorkloadQuery | None = None
    found: MachineAnswer | None = None
    try:
        query = parse_query(values, get_language())
        if machine_id is None:
            context["problem"] = _("Name the machine by its id: machine=12.")
        elif gpus is not None and shown_gpus is None:
            context["problem"] = _("Name the GPUs its row uses as a whole number: gpus=2.")
        else:
            found = machine_answer(query, machine_id, model_row=row)
    except QueryError as error:
        context["problem"] = " ".join(str(message) for message in error.errors.values())
    status = 200
    if context["problem"] is not None:
        status = 400
    elif found is None:
        status = 404
        context["problem"] = _("No machine %(id)s is offered: it is unknown, or its provider no longer lists "
                               "it. The answer lists the machines offered now.") % {"id": machine_id}
    # Back to the answer: the query as the answer writes it, or as typed where it is refused.
    if query is not None:
        context["query_string"] = query.as_query_string()
    else:
        public = QueryDict(_public_query(params), mutable=True)
        for name in ("machine", "gpus"):
            public.pop(name, None)
        context["query_string"] = public.urlencode()
    if found is not None:
        context.update(_machine_words(found, shown_gpus))
    if request.htmx:
        return render(request, "wizard/machine.html#detail", context, status=status)
    return render(request, "wizard/machine.html", context, status=status)


def _machine_words(found: MachineAnswer, shown_gpus: int | None) -> dict[str, Any]:
    """What a machine's page shows of `found`: its row with the words the answer's table adds, its
    details part, and why it is not listed now or what changed since its row was shown."""
    offer = found.offer
    name = f"{offer.provider} {offer.provider_machine_id}"
    if found.machine is None:
        if found.reason:
            reason = _("%(machine)s no longer fits this query (%(reason)s); the answer lists the machines "
                       "that do.") % {"machine": name, "reason": found.reason}
        else:
            reason = _("%(machine)s no longer fits this query; the answer lists the machines that do.") % {
                "machine": name}
        return {"title": name, "not_listed": reason}
    # The row as the answer's table writes it (`_worded_answer`): its words, its GPU's history and what-if.
    with i18n.words_remembered():
        m = machine_row(found.machine)
        add_row_words([m], what_if=what_if_query(found.query),
                      history_paths=gpu_history_paths([found.machine]))
        detail = machine_detail(m)
    words: dict[str, Any] = {
        "m": m, "rows": [m], "detail": detail, "kind": "alternative" if found.alternative else "machine",
        "title": _("%(machine)s: %(gpus)s × %(gpu)s") % {"machine": name, "gpus": m["gpus_used"],
                                                          "gpu": m["gpu_type"]},
        "workload_title": found.breakdown.title,
    }
    if shown_gpus is not None and shown_gpus != m["gpus_used"]:
        words["notice"] = _("The machine's figures changed since its row was shown: it now uses %(now)s × "
                            "%(gpu)s, not %(shown)s.") % {"now": m["gpus_used"], "gpu": m["gpu_type"],
                                                         "shown": shown_gpus}
    return words


@require_GET
def calculators(request):
    """The two other calculators: GPU count for a throughput target and the rule of thumb."""
    language = get_language()  # numbers as the page's language writes them
    params = request.GET
    throughput_form = ThroughputForm(params if "target" in params else None, number_language=language)
    rule_form = RuleOfThumbForm(params if "parameters" in params else None, number_language=language)
    plan = rule = what_if = None
    asked, refused = None, {}
    if "gpu_memory_gib" in params or "gpu" in params:
        try:
            asked = with_usable_memory(with_capacity_defaults(params))
        except QueryError as error:
            asked, refused = with_capacity_defaults(params), error.errors
    what_if_form = CapacityPageForm(
        asked, initial=CAPACITY_DEFAULTS, number_language=language, models=language_model_choices(),
        gpus=gpu_choices(),
    )
    if what_if_form.is_bound and not refused:
        # What the model refuses of the settings read is said with the fields' own messages, all at once.
        valid = what_if_form.is_valid()
        # The page's form carries every engine's fields: only what the chosen engine cannot read is said.
        checks = {**settings_refusals(what_if_form.cleaned_data),
                  **(engine_refusals(what_if_form.cleaned_data, {}) if valid else {})}
        refused = {name: message for name, message in checks.items() if name not in what_if_form.errors}
        if valid and not refused:
            try:
                what_if = capacity_for(capacity_query_from(what_if_form.cleaned_data))
            except QueryError as error:
                refused = error.errors
    for name, message in refused.items():
        what_if_form.add_error(name if name in what_if_form.fields else None, message)
    if throughput_form.is_bound and throughput_form.is_valid():
        data = throughput_form.cleaned_data
        plan = gpus_for_throughput(data["target"], data["measured"], data["efficiency"], data["redundancy"])
    if rule_form.is_bound and rule_form.is_valid():
        rule = rule_of_thumb(rule_form.cleaned_data["parameters"], rule_form.cleaned_data["precision"])
    # Each form carries the other's values, so submitting one keeps the other's answer.
    what_if_names = set(CapacityPageForm.base_fields)
    rule_names, throughput_names = set(RuleOfThumbForm.base_fields), set(ThroughputForm.base_fields)
    keep = {
        "throughput": [(name, params[name]) for name in params if name in rule_names | what_if_names],
        "rule": [(name, params[name]) for name in params if name in throughput_names | what_if_names],
        "what_if": [(name, params[name]) for name in params if name in rule_names | throughput_names],
    }
    return render(
        request,
        "wizard/calculators.html",
        {"throughput_form": throughput_form, "rule_form": rule_form, "plan": plan, "rule": rule,
         "keep": keep, "what_if_form": what_if_form, "what_if": what_if},
    )


@require_GET
def tiers(request):
    return render(request, "wizard/tiers.html")


@require_GET
@page_rate_limited
@database.reads_replica_first
def gpu_history(request, slug: str):
    """A GPU type's price and stock history over the last 30 days, in the market and country its
    filters ask (each bad filter said beside it, the rest still applied). With htmx, the history
    partial alone (the filters with it)."""
    gpu_type = get_object_or_404(GpuType, slug=slug)
    form = HistoryFilterForm(request.GET)
    form.is_valid()
    market = form.cleaned_data.get("market", Market.ON_DEMAND)
    country = form.cleaned_data.get("country", "")
    history = gpu_type_history(gpu_type, market=market, country=country, now=timezone.now())
    context = {
        "gpu_type": gpu_type,
        "history": history,
        "chart": draw(history),
        "days": history.days,
        "median_30d": history.median_30d,
        "errors": form.errors_by_field(),
        "market_choices": Market.choices,
        "country_choices": country_choices(history),
        # What was asked stays selected, a refused value too (it is named beside its field).
        "asked_market": request.GET.get("market", market),
        "asked_country": request.GET.get("country", country).strip().upper(),
        "market_label": Market(market).label,
        "place_label": country_name(country) if country else _("every country"),
    }
    template = "wizard/_history.html" if request.htmx else "wizard/gpu_history.html"
    return render(request, template, context)
