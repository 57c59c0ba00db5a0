"""The machine tables' rows as the page writes them (`nodelodge.wizard.machine_rows`): what a person
reads on a row, escaped, in the page's language. No database: each test builds its rows."""
from __future__ import annotations

import re

import pytest
from django.utils import translation

from nodelodge.wizard.machine_rows import machine_detail, machine_rows
from nodelodge.wizard.rows import add_row_words


def row(**changes) -> dict:
    """A machine row as the answer gives it (`sizing.results.machine_row`), before the page's words."""
    data = {
        "id": 41, "provider": "Alpine GPU", "tier": "secure", "provider_machine_id": "zrh-7",
        "gpu_type": "H100 SXM 80GB", "gpu_count": 8, "free_gpus": 6, "gpus_used": 2,
        "memory_per_gpu_gib": 79.65, "memory_source": "host", "memory_source_short": "host-reported",
        "country": "CH", "region": "Zurich", "price_per_gpu_hour": "2.4900", "price_per_hour": "4.9800",
        "budget_hours": None, "budget_days": None, "budget_text": None,
        "budget_capped_by_booking_limit": False, "booking_limit_hours": None, "confidence": "high",
        "confidence_reasons": ["memory reported by the host"], "why_it_fits": ["2 × 79.65 GiB hold 130 GiB"],
        "limits": [], "measured_speeds": [], "price_per_million_tokens": None,
        "price_per_million_tokens_text": None, "capacity_text": None, "command": None,
    }
    data.update(changes)
    return data


def rendered(rows: list[dict], columns: int = 5, query_string: str = "model=llama-3-1-70b", whole: bool = False) -> str:
    """The rows as the result panel writes them (each row's details loaded when opened), or `whole`, as a
    machine's own page does (the details written in the row, open)."""
    add_row_words(rows)
    return str(machine_rows(rows, columns, query_string, whole=whole))


def written(changes: dict | None = None) -> str:
    """A row's details part (`machine_detail`), as its machine's page serves it to the panel."""
    rows = [row(**(changes or {}))]
    add_row_words(rows)
    return str(machine_detail(rows[0]))


def test_a_row_shows_the_machine_its_gpus_memory_and_price_and_books_what_it_shows():
    html = rendered([row()])
    assert '<tbody class="machine-row" data-machine-id="41">' in html
    assert "<strong>Alpine GPU</strong>" in html and '<span class="muted mono">zrh-7</span>' in html
    assert "<strong>2 ×</strong> H100 SXM 80GB" in html and "6 of 8 free" in html
    assert "79.65" in html and "$4.98" in html and "2 × $2.49" in html
    # The Launch form carries exactly the machine, its GPUs, the price shown and the query.
    assert '<input type="hidden" name="machine" value="41">' in html
    assert '<input type="hidden" name="gpus" value="2">' in html
    assert '<input type="hidden" name="price_per_hour" value="4.9800">' in html
    assert '<input type="hidden" name="query" value="model=llama-3-1-70b">' in html
    assert 'aria-label="Launch Alpine GPU zrh-7: review first"' in html
    assert "<li>none</li>" in written()  # no limits, said so


def test_the_panel_links_each_rows_details_and_a_machines_page_writes_them_open():
    query = 'model=llama-3-1-70b&countries=DE,"FR"'
    html = rendered([row()], query_string=query)
    page = "/machine/?model=llama-3-1-70b&amp;countries=DE,&quot;FR&quot;&amp;machine=41&amp;gpus=2"
    assert (f'<details class="machine" hx-get="{page}" hx-trigger="toggle once" hx-target="find .machine-detail" '
            'hx-swap="outerHTML" hx-push-url="false">') in html
    assert (f'<div class="machine-detail"><p><a href="{page}" data-testid="machine-detail-link">Why it fits, its '
            "limits and the details of this machine</a></p></div>") in html
    assert "Why it fits · limits" in html and "<li>none</li>" not in html and "<strong>Limits</strong>" not in html
    whole = rendered([row()], query_string=query, whole=True)
    assert '<details class="machine" open>\n' in whole and "hx-get" not in whole and "machine-detail-link" not in whole
    assert written() in whole
    # but for the details, the row is the same on the panel and on the machine's page
    assert re.sub(r"<details.*?</details>", "", html, flags=re.S) == re.sub(r"<details.*?</details>", "", whole,
                                                                            flags=re.S)


@pytest.mark.parametrize("whole", [False, True])
def test_what_a_feed_sends_is_escaped_everywhere_it_appears(whole):
    html = rendered([row(provider='Evil <script>alert(1)</script> & Co', provider_machine_id='"><img>',
                         region="<b>Nord</b>", limits=["<i>interruptible</i>"])],
                    query_string='a=1&b="2"', whole=whole)
    assert "<script>" not in html and "<img>" not in html and "<b>Nord" not in html and "<i>" not in html
    assert "Evil &lt;script&gt;alert(1)&lt;/script&gt; &amp; Co" in html
    assert 'value="a=1&amp;b=&quot;2&quot;"' in html
    assert ("<li>&lt;i&gt;interruptible&lt;/i&gt;</li>" in html) is whole  # the limits: in the details


def test_a_budget_capped_by_the_booking_limit_says_both():
    html = rendered([row(budget_hours=120.0, budget_days=5.0, budget_text="covers 120 h of 200 h",
                         budget_capped_by_booking_limit=True, booking_limit_hours=120)])
    assert "Budget covers <strong class=\"nowrap\">120.0 h</strong>" in html
    assert "(5.0 days · limit 120 h)" in html
    assert "<li>covers 120 h of 200 h</li>" in written(dict(budget_text="covers 120 h of 200 h"))


def test_a_measured_speed_and_the_serve_command_read_in_german():
    speed = {"model": "llama-3-1-70b", "precision": 8, "value": 1234.5, "unit": "tokens/s", "gpus": 2,
             "engine": "vllm", "engine_version": "0.6.3", "concurrency": 16, "input_tokens": 512,
             "output_tokens": 256, "measured_at": "2026-11-02T10:00:00+00:00", "measured_by": "Alpine GPU"}
    with translation.override("de"):
        html = written(dict(measured_speeds=[speed], command="vllm serve x --tensor-parallel-size 2"))
    assert ("<li>1234,5 tokens/s auf 2 GPUs (8-Bit, vllm 0.6.3, 16 gleichzeitig, 512 ein / 256 aus, "
            "gemessen 2026-11-02 von Alpine GPU)</li>") in html
    assert '<code id="command-41" data-testid="command">vllm serve x --tensor-parallel-size 2</code>' in html
    assert "<strong>Gemessene Geschwindigkeit</strong>" in html and "<strong>Mit vLLM starten</strong>" in html


def test_the_price_per_million_column_mutes_a_row_without_a_measured_speed():
    html = rendered([row(price_per_million_tokens="0.2823", price_per_million_tokens_text="$0.2823"),
                     row(id=42, price_per_million_tokens_text="no measured speed")], columns=6)
    cells = re.findall(r'data-testid="per-million">(.*?)</td>', html)
    assert cells == ["$0.2823", '<span class="muted">no measured speed</span>']
    assert html.count('<td colspan="6">') == 2


def test_a_grouped_list_heads_each_gpu_types_first_row():
    rows = [row(), row(id=42), row(id=43, gpu_type="A100 80GB")]
    add_row_words(rows, group_counts={"H100 SXM 80GB": 2, "A100 80GB": 1})
    html = str(machine_rows(rows, 5, ""))
    headings = re.findall(r'data-testid="group-heading">(.*?)</th>', html)
    assert headings == ["H100 SXM 80GB · 2 machines", "A100 80GB · 1 machine"]
    assert html.index("A100 80GB · 1 machine") < html.index('data-machine-id="43"')
