"""The words the page's machine tables repeat on every row, written once per row in Python.

A table lists up to a thousand machines; each row's translated phrases and figures cost a template
tag and a formatter call apiece when the template writes them, several times what writing them here
costs. The API's rows are the same dicts without these keys."""
from __future__ import annotations

from urllib.parse import urlencode

from django.urls import reverse
from django.utils.text import capfirst
from django.utils.translation import gettext, ngettext

from nodelodge.recommendations.vllm_release import release_params
from sizing.markets import ON_DEMAND
from sizing.units import money_text

from .templatetags.console import CONFIDENCE_WORDS, country_name, decimals, gib2, place_name


def group_form_words(kind: str, machines: list[dict], label: str) -> dict:
    """What a form booking a cluster or a throughput plan all or nothing writes
    (launches/_launch_group_form.html): the machines it books as its field takes them ("id:gpus,…") and
    its button's accessible name. `kind`: "cluster" or "plan"; `machines`: each with its id and the GPUs
    it takes."""
    if kind == "cluster":
        named = gettext("Launch cluster: %(label)s")
    else:
        named = gettext("Launch this plan: %(label)s")
    return {
        "group_machines_value": ",".join(f"{machine['id']}:{machine['gpus']}" for machine in machines),
        "group_aria_label": named % {"label": label},
    }


def add_cluster_words(clusters: list[dict]) -> None:
    """Adds to each cluster row what the page shows of it."""
    shape = gettext("%(machines)s × (%(gpus)s × %(gpu)s)")
    need_of = gettext("%(need)s of %(budget)s GiB")
    hours_of = gettext("%(hours)s h")
    split = gettext("TP %(tp)s × PP %(pp)s")
    launch = gettext("%(shape)s at %(provider)s, %(site)s")
    confidence_of = gettext("Confidence: %(confidence)s")
    for row in clusters:
        row["shape_text"] = shape % {"machines": row["machines"], "gpus": row["gpus_per_machine"],
                                     "gpu": row["gpu_type"]}
        row["split_text"] = split % {"tp": row["tensor_parallel"], "pp": row["pipeline_parallel"]}
        row["location_text"] = country_name(row["country"])
        row["need_text"] = gib2(row["need_per_gpu_gib"])
        row["budget_gib_text"] = gib2(row["budget_per_gpu_gib"])
        row["need_line"] = need_of % {"need": row["need_text"], "budget": row["budget_gib_text"]}
        if row["hours_covered"] is not None:
            row["hours_text"] = hours_of % {"hours": decimals(row["hours_covered"], 1)}
        row["price_per_hour_text"] = money_text(row["price_per_hour"])
        row["machine_prices_text"] = machine_prices_text(row)
        row["confidence_word"] = str(CONFIDENCE_WORDS.get(row["confidence"], row["confidence"]))
        row["confidence_heading"] = confidence_of % {"confidence": row["confidence_word"]}
        row["launch_label"] = launch % {"shape": row["shape_text"], "provider": row["provider"],
                                        "site": row["site"]}
        row["machine_ids_text"] = ",".join(str(machine_id) for machine_id in row["machine_ids"])
        # What the Launch cluster form books: every machine whole.
        row.update(group_form_words("cluster", [{"id": machine_id, "gpus": row["gpus_per_machine"]}
                                                for machine_id in row["machine_ids"]], row["launch_label"]))
        for item in row.get("items", []) + row.get("outside_budget", []):  # a cluster's details
            item["gib_text"] = gib2(item["gib"])


def machine_prices_text(row: dict) -> str:
    """A cluster's machines' prices per hour: "$20.00 + $20.00", each named by its market ("$16.00
    interruptible + $20.00 on demand") where one is not on demand."""
    prices = [money_text(price) for price in row["machine_prices_per_hour"]]
    if all(market == ON_DEMAND for market in row["machine_markets"]):
        return " + ".join(prices)
    return " + ".join(f"{price} {market}" for price, market in zip(prices, row["machine_markets_text"],
                                                                    strict=True))


def what_if_query(query) -> dict[str, str] | None:
    """What a vLLM answer's machine rows carry to the GPU what-if (the calculators page): the model,
    its precisions and the context and requests asked (max_model_len, max_num_seqs, as the row's own
    command starts it); None where the answer is not vLLM's."""
    if query.engine != "vllm" or query.workload != "inference" or not query.model_slug:
        return None
    asked = {"model": query.model_slug, "precision": query.precision, "kv_cache": query.kv_bits,
             "engine": "vllm", "max_model_len": query.context, "max_num_seqs": query.requests,
             **release_params(query.vllm_release)}
    return {name: str(value) for name, value in asked.items() if value is not None}


def what_if_href(what_if: dict[str, str], gpu_type: str, gpus: int) -> str:
    """The GPU what-if prefilled with a machine's GPU type and count (tensor parallel over its GPUs)."""
    return (reverse("wizard:calculators") + "?"
            + urlencode({**what_if, "gpu": gpu_type, "tensor_parallel": gpus}) + "#what-if-title")


def add_row_words(rows: list[dict], group_counts: dict[str, int] | None = None,
                  what_if: dict[str, str] | None = None, history_paths: dict[str, str] | None = None) -> None:
    """Adds to each machine row what the table shows of it; with `group_counts` (machines per GPU
    type, when the list is grouped), a heading on each group's first row; with `what_if` (a vLLM
    answer's `what_if_query`), the link to the GPU what-if for the row's GPU type and count; with
    `history_paths` (`gpu_history_paths`), the GPU name's link to its price history."""
    history_paths = history_paths or {}
    history_of = gettext("Price history of the %(gpu)s")
    what_if_of = gettext("GPU what-if: what %(gpus)s × %(gpu)s hold under vLLM")
    free_of = gettext("%(free)s of %(count)s free")
    launch = gettext("Launch %(provider)s %(machine)s: review first")
    confidence_of = gettext("Confidence: %(confidence)s")
    breaks_of = gettext("breaks: %(breaks)s")
    previous = None
    for row in rows:
        row["tier_label"] = capfirst(row["tier"])  # product names: the same in every language
        row["free_text"] = free_of % {"free": row["free_gpus"], "count": row["gpu_count"]}
        row["memory_text"] = gib2(row["memory_per_gpu_gib"])
        # The answer named the country once for all its rows (`sizing.results.machine_row`).
        row["location_text"] = row.get("country_name") or country_name(row["country"])
        if row.get("region"):
            row["region"] = place_name(row["region"])  # the page's row only: the API keeps the feed's name
        row["price_per_hour_text"] = money_text(row["price_per_hour"])
        row["price_per_gpu_hour_text"] = money_text(row["price_per_gpu_hour"])
        row["confidence_word"] = str(CONFIDENCE_WORDS.get(row["confidence"], row["confidence"]))
        row["confidence_heading"] = confidence_of % {"confidence": row["confidence_word"]}
        row["launch_label"] = launch % {"provider": row["provider"], "machine": row["provider_machine_id"]}
        row["history_href"] = history_paths.get(row["gpu_type"], "")
        row["history_label"] = history_of % {"gpu": row["gpu_type"]}
        if what_if is not None:
            row["what_if_href"] = what_if_href(what_if, row["gpu_type"], row["gpus_used"])
            row["what_if_label"] = what_if_of % {"gpus": row["gpus_used"], "gpu": row["gpu_type"]}
        if row.get("breaks_text"):
            row["breaks_heading"] = breaks_of % {"breaks": "; ".join(row["breaks_text"])}
        if group_counts is not None and row["gpu_type"] != previous:
            count = group_counts.get(row["gpu_type"], 0)
            row["group_heading"] = ngettext(
                "%(gpu)s · %(count)s machine", "%(gpu)s · %(count)s machines", count
            ) % {"gpu": row["gpu_type"], "count": count}
            previous = row["gpu_type"]
