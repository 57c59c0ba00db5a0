"""The machine tables' rows, written in Python: the result panel's hot loop.

A panel lists 25 machines by default and up to 200; through the template language each row cost about
half a millisecond (a variable lookup, an escape and a localization per value, a translation per label),
most of the panel's rendering time. Here each row is a few formatted strings, the labels translated
once per table. `_machine_table.html` keeps the table and its header; the tests hold the rows to what a
person reads (tests/wizard/test_machine_rows.py).

A row's details (its command, why it fits, its limits, markets and measured speeds: a quarter to a
third of a panel's bytes, few of them ever opened) are loaded when a person opens them: the panel writes
each row's summary and a link to the machine's own page (`wizard:machine`), which serves the details
part (`machine_detail`) to htmx and the whole row with its details open without JavaScript.

Values are escaped as the template escaped them (`conditional_escape`); translated messages are not
(as `blocktranslate` leaves them), their values are. Whole numbers (ids, GPU counts) are written as they
are; the measured speeds as the page's language writes numbers."""
from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from django.urls import reverse
from django.utils.formats import localize
from django.utils.safestring import SafeData, SafeString, mark_safe

# The answer's own translations: inside the view's `words_remembered` each message is asked of Django
# once per answer, not once per row.
from sizing.i18n import gettext, ngettext
from sizing.units import decimal_text, money_text
from sizing.wording import per_hour


def _e(value: object) -> str:
    """A value as the template wrote it (`conditional_escape`: safe text kept, anything else escaped as
    its str()), without the lazy-text checks the rows' plain values do not need."""
    if isinstance(value, SafeData):
        return str(value)
    if type(value) is int:  # ids, GPU counts: digits only, nothing to escape
        return str(value)
    return html.escape(str(value))


def _number(value: object) -> str:
    """A figure as the page's language writes it (the template's `{% localize on %}`)."""
    return _e(localize(value, use_l10n=True))


def _labels() -> dict[str, str]:
    """What every row repeats, translated once per table (each message written out, so the catalog's
    extraction finds it)."""
    labels = {
        "machine": gettext("Machine"), "gpus_used": gettext("GPUs used"), "memory": gettext("Memory per GPU"),
        "price": gettext("Price per hour"), "per_million": gettext("Per million tokens"),
        "budget": gettext("Budget covers"), "confidence": gettext("Confidence"), "launch": gettext("Launch"),
        "why_limits": gettext("Why it fits · limits"), "why": gettext("Why it fits"),
        "limits": gettext("Limits"), "none": gettext("none"), "measured": gettext("Measured speed"),
        "what_if": gettext("GPU what-if"), "start_vllm": gettext("Start it with vLLM"),
        "start_llamacpp": gettext("Start it with llama.cpp"), "start_ollama": gettext("Start it with Ollama"),
        "start_sglang": gettext("Start it with SGLang"),
        "copied": gettext("Copied"), "copy": gettext("Copy the command"),
        "not_on_gpu": gettext("Does not run on this GPU as asked"),
        "start_instead": gettext("Start what runs on this GPU with vLLM"),
        "markets": gettext("Markets"),
        "gguf_file": gettext("GGUF file"), "published": gettext("a published file"),
        "not_published": gettext("no published file: sized from llama.cpp's own rules"),
        "open_detail": gettext("Why it fits, its limits and the details of this machine"),
    }
    return {name: _e(message) for name, message in labels.items()}


def machine_rows(machines: Iterable[Mapping[str, Any]], columns: int, query_string: str,
                 *, whole: bool = False) -> SafeString:
    """The `<tbody>` of each machine row (`wizard.rows.add_row_words` has added its words), with a
    group heading before a row that starts a group. Each row's details are loaded when opened (htmx;
    without JavaScript its link opens the machine's page); `whole`: written in the row, open (the
    machine's own page)."""
    labels = _labels()
    review = _e(reverse("launches:review"))
    query = _e(query_string)
    page = None if whole else f'{_e(reverse("wizard:machine"))}?{query}&amp;'
    parts = []
    for machine in machines:
        if machine.get("group_heading"):
            parts.append(
                f'<tbody class="group-head"><tr><th scope="rowgroup" colspan="{columns}" '
                f'data-testid="group-heading">{_e(machine["group_heading"])}</th></tr></tbody>'
            )
        parts.append(_row(machine, labels, columns, review, query, page))
    return mark_safe("\n".join(parts))  # noqa: S308  # nosec B308, B703: every value above is escaped


def machine_detail(m: Mapping[str, Any]) -> SafeString:
    """A row's details part, as its row wrote it inside `<details>` (the machine's page serves it to
    the panel when the row is opened)."""
    return mark_safe(_detail_part(m, _labels(), _e(m["id"])))  # noqa: S308  # nosec B308, B703: escaped


def _detail_part(m: Mapping[str, Any], labels: Mapping[str, str], machine_id: str) -> str:
    return f'<div class="machine-detail">\n{_detail(m, labels, machine_id)}\n</div>'


def _disclosure(m: Mapping[str, Any], labels: Mapping[str, str], machine_id: str, page: str | None) -> str:
    """The row's `<details>`: its summary, and its details written (`page` None) or loaded when opened
    from the machine's page, whose address (`page`: the page's address and the answer's query, escaped)
    the placeholder links to without JavaScript."""
    if page is None:
        return (f'<details class="machine" open>\n{_summary(m, labels)}\n'
                f'{_detail_part(m, labels, machine_id)}\n</details>')
    href = f'{page}machine={machine_id}&amp;gpus={_e(m["gpus_used"])}'  # the GPUs its row uses
    return (
        f'<details class="machine" hx-get="{href}" hx-trigger="toggle once" hx-target="find .machine-detail" '
        f'hx-swap="outerHTML" hx-push-url="false">\n{_summary(m, labels)}\n'
        f'<div class="machine-detail"><p><a href="{href}" data-testid="machine-detail-link">'
        f'{labels["open_detail"]}</a></p></div>\n</details>'
    )


def _row(m: Mapping[str, Any], labels: Mapping[str, str], columns: int, review: str, query: str,
         page: str | None) -> str:
    machine_id = _e(m["id"])
    gpus_used = _e(m["gpus_used"])
    region = f'<span class="muted">, {_e(m["region"])}</span>' if m.get("region") else ""
    what_if = (
        f'<br><a href="{_e(m["what_if_href"])}" class="what-if-link" data-testid="what-if-link" '
        f'aria-label="{_e(m["what_if_label"])}">{labels["what_if"]}</a>'
        if m.get("what_if_href") else ""
    )
    gpu = _e(m["gpu_type"])
    if m.get("history_href"):
        gpu = (f'<a href="{_e(m["history_href"])}" class="gpu-history-link" data-testid="gpu-history-link" '
               f'title="{_e(m["history_label"])}">{gpu}</a>')
    per_million = ""
    if m.get("price_per_million_tokens_text"):
        text = _e(m["price_per_million_tokens_text"])
        shown = text if m.get("price_per_million_tokens") else f'<span class="muted">{text}</span>'
        per_million = (f'<td class="num c-per-million" data-label="{labels["per_million"]}" '
                       f'data-testid="per-million">{shown}</td>')
    return (
        f'<tbody class="machine-row" data-machine-id="{machine_id}">\n<tr>\n'
        f'<td class="c-machine" data-label="{labels["machine"]}"><strong>{_e(m["provider"])}</strong> '
        f'<span class="badge {_e(m["tier"])}">{_e(m["tier_label"])}</span><br>'
        f'<span class="muted mono">{_e(m["provider_machine_id"])}</span> '
        f'<span class="c-location">· {_e(m["location_text"])}{region}</span></td>\n'
        f'<td class="c-gpu" data-label="{labels["gpus_used"]}"><span class="nowrap"><strong>{gpus_used} ×'
        f'</strong> {gpu}</span><br><span class="muted">{_e(m["free_text"])}</span>{what_if}'
        f'</td>\n'
        f'<td class="num c-memory" data-label="{labels["memory"]}">{_e(m["memory_text"])}'
        f'<span class="card-only"> GiB</span><br><span class="muted">{_e(m["memory_source_short"])}</span>'
        f'</td>\n'
        f'<td class="num c-price" data-label="{labels["price"]}"><strong>{_e(m["price_per_hour_text"])}'
        f'</strong><span class="card-only">/h</span>{_market_used(m)}<br><span class="muted">{gpus_used} × '
        f'{_e(m["price_per_gpu_hour_text"])}</span>{_other_markets(m)}</td>\n'
        f'{per_million}'
        f'<td class="c-launch">\n<form method="get" action="{review}" class="launch-form">\n'
        f'<input type="hidden" name="machine" value="{machine_id}">\n'
        f'<input type="hidden" name="gpus" value="{gpus_used}">\n'
        f'<input type="hidden" name="price_per_hour" value="{_e(m["price_per_hour"])}">\n'
        f'<input type="hidden" name="query" value="{query}">\n'
        f'<button type="submit" aria-label="{_e(m["launch_label"])}">{labels["launch"]}</button>\n'
        f'</form>\n</td>\n</tr>\n'
        f'<tr class="detail-row">\n<td colspan="{columns}">\n{_disclosure(m, labels, machine_id, page)}\n'
        f'</td>\n</tr>\n</tbody>'
    )


def _market_used(m: Mapping[str, Any]) -> str:
    """The market of the price shown, where the market preference let in another than the listed price's
    (the first market); nothing otherwise, as rows always were."""
    markets = m.get("markets", ())
    if not markets or m.get("market", markets[0]["market"]) == markets[0]["market"]:
        return ""
    return f' <span class="badge market-used" data-testid="market-used">{_e(m["market_text"])}</span>'


def _other_markets(m: Mapping[str, Any]) -> str:
    """The row's other markets under its price (all but the one its price is in, by default the listed
    price's): "interruptible $0.61/h"."""
    markets = m.get("markets", ())
    used = m.get("market", markets[0]["market"] if markets else None)
    return "".join(
        f'<br><span class="muted market" data-testid="market-price">{_e(market["market_text"])} '
        f'{_e(per_hour(Decimal(market["price_per_hour"])))}</span>'
        for market in markets if market["market"] != used
    )


def _market_line(market: Mapping[str, Any], gpus_used: object) -> str:
    """One market in the row's detail: its hourly price, per GPU-hour, terms and what the budget covers."""
    words = gettext("%(market)s: %(price)s (%(gpus)s × %(per_gpu)s per GPU-hour)") % {
        "market": market["market_text"], "price": per_hour(Decimal(market["price_per_hour"])),
        "gpus": gpus_used, "per_gpu": money_text(Decimal(market["price_per_gpu_hour"])),
    }
    return "; ".join(part for part in (words, market.get("terms_text"), market.get("budget_text")) if part)


def _summary(m: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    """The row's second line: what a renter checks after GPU, memory and price, beside the disclosure."""
    breaks = f' · <strong>{_e(m["breaks_heading"])}</strong>' if m.get("breaks_heading") else ""
    capacity = (f'<span class="fact c-capacity" data-testid="capacity">{_e(m["capacity_text"])}</span>'
                if m.get("capacity_text") else "")
    if m.get("runs_on_gpu") is False:
        capacity += (f' <span class="fact c-gpu-support" data-testid="gpu-support-flag">'
                     f'{labels["not_on_gpu"]}</span>')

    budget = ""
    if m.get("budget_hours") is not None:
        hours = gettext("%(hours)s h") % {"hours": _e(decimal_text(float(m["budget_hours"]), 1))}
        days = gettext("%(days)s days") % {"days": _e(decimal_text(float(m["budget_days"]), 1))}
        if m.get("budget_capped_by_booking_limit"):
            days += " · " + gettext("limit %(limit)s h") % {"limit": _e(m["booking_limit_hours"])}
        budget = (f'<span class="fact c-budget">{labels["budget"]} <strong class="nowrap">{hours}</strong> '
                  f'<span class="nowrap">({days})</span></span>')
    return (
        f'<summary><span class="why"><span class="disclosure" aria-hidden="true"></span>'
        f'{labels["why_limits"]}{breaks}</span>\n{capacity}\n'
        f'<span class="fact c-confidence">{labels["confidence"]} <span class="badge {_e(m["confidence"])}">'
        f'{_e(m["confidence_word"])}</span></span>\n{budget}{_reported(m)}</summary>'
    )


def _reported(m: Mapping[str, Any]) -> str:
    """The reliability and stock the provider reports, or "not reported" (rows of the wizard's answer)."""
    if "reliability_text" not in m:
        return ""
    return (f'\n<span class="fact c-reliability" data-testid="reliability">{_e(m["reliability_text"])}</span>'
            f'\n<span class="fact c-stock" data-testid="stock">{_e(m["stock_text"])}</span>')


def _section(title: str, lines: Iterable[object], empty: str = "") -> str:
    """A titled list of the row's detail; `empty` said where it has no line."""
    items = "".join(f"<li>{_e(line)}</li>" for line in lines) or (f"<li>{empty}</li>" if empty else "")
    return f"<div><strong>{title}</strong><ul>{items}</ul></div>"


def _command_block(title: str, command: str, element_id: str, test_id: str,
                   labels: Mapping[str, str]) -> str:
    """A command to copy, under its title."""
    return (
        f'<div class="serve-command"><strong>{title}</strong><pre><code '
        f'id="{element_id}" data-testid="{test_id}">{_e(command)}</code></pre>'
        f'<button type="button" class="copy-command" data-copy-from="{element_id}" '
        f'data-copied="{labels["copied"]}">{labels["copy"]}</button></div>'
    )


def _start_label(command: str) -> str:
    """Which engine a row's command starts, by how the command begins (each engine writes its own)."""
    if command.startswith("llama-server"):
        return "start_llamacpp"
    if command.startswith("OLLAMA_"):
        return "start_ollama"
    if command.startswith("python -m sglang"):
        return "start_sglang"
    return "start_vllm"


def _detail(m: Mapping[str, Any], labels: Mapping[str, str], machine_id: str) -> str:
    parts = []
    if m.get("command"):
        parts.append(_command_block(labels[_start_label(m["command"])], m["command"], f"command-{machine_id}",
                                    "command", labels))
    if m.get("gguf_file"):
        parts.append(f'<p class="gguf-file" data-testid="gguf-file"><strong>{labels["gguf_file"]}</strong> '
                     f'<code>{_e(m["gguf_file"])}</code> ({_e(m["quantization"])}; '
                     f'{labels["published"] if m.get("gguf_published") else labels["not_published"]})</p>')
    if m.get("gpu_support_text"):
        parts.append(f'<div class="gpu-support"><strong>{labels["not_on_gpu"]}</strong><ul>'
                     f'<li data-testid="gpu-support">{_e(m["gpu_support_text"])}</li></ul></div>')
    alternative = m.get("alternative") or {}
    if alternative.get("command"):
        parts.append(_command_block(labels["start_instead"], alternative["command"],
                                    f"command-alternative-{machine_id}", "alternative-command", labels))
    if m.get("budget_text"):
        parts.append(_section(labels["budget"], [m["budget_text"]]))
    if m.get("markets"):
        lines = [_market_line(market, m["gpus_used"]) for market in m["markets"]]
        parts.append(_section(labels["markets"], lines))
    parts.append(_section(labels["why"], m["why_it_fits"]))
    parts.append(_section(labels["limits"], m["limits"], labels["none"]))
    parts.append(_section(_e(m["confidence_heading"]), m["confidence_reasons"]))
    if m.get("measured_speeds"):
        speeds = [_speed(speed) for speed in m["measured_speeds"]]
        if m.get("measured_speeds_note"):
            speeds.append(m["measured_speeds_note"])
        parts.append(_section(labels["measured"], speeds))
    return "\n".join(parts)


def _speed(s: Mapping[str, Any]) -> SafeString:
    """One measured speed and how it was measured, as the page's language writes it (its values
    escaped here)."""
    on_gpus = ngettext("%(value)s %(unit)s on %(gpus)s GPU", "%(value)s %(unit)s on %(gpus)s GPUs", s["gpus"])
    words = on_gpus % {"value": _number(s["value"]), "unit": _e(s["unit"]), "gpus": _number(s["gpus"])}
    how = [gettext("%(bits)s-bit") % {"bits": _number(s["precision"])}]
    if s.get("engine"):
        how[-1] += f', {_e(s["engine"])} {_e(s.get("engine_version") or "")}'
    if s.get("concurrency"):
        how.append(gettext("%(concurrency)s concurrent") % {"concurrency": _number(s["concurrency"])})
    if s.get("input_tokens"):
        how.append(gettext("%(input)s in / %(output)s out") % {
            "input": _number(s["input_tokens"]), "output": _number(s.get("output_tokens") or "")
        })
    measured = gettext("measured %(date)s") % {"date": _e(str(s["measured_at"])[:10])}
    if s.get("measured_by"):
        measured += " " + gettext("by %(who)s") % {"who": _e(s["measured_by"])}
    how.append(measured)
    return mark_safe(f"{words} ({', '.join(how)})")  # noqa: S308  # nosec B308, B703: values escaped above
