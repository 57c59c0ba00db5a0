"""A machine's own page (`/machine/?<the answer's query>&machine=<id>&gpus=<n>`): its row as the answer
writes it with the details open (the command, why it fits, its limits, markets, measured speeds) and its
Launch button; the part a row of the result panel loads when it is opened (htmx), the very details the
row wrote before they were loaded on opening; German; one machine read whatever is asked; and a clear
404, 400 or 200 for a machine unknown or gone, a refused query, or a machine the answer no longer lists,
never a 500."""
import re
from decimal import Decimal

import pytest
from django.db import connection
from django.http import QueryDict
from django.test.utils import CaptureQueriesContext
from django.utils import timezone, translation
from django.utils.html import escape

from nodelodge.recommendations.answer import recommendation_for
from nodelodge.recommendations.query import parse_query
from nodelodge.wizard.machine_rows import machine_detail
from nodelodge.wizard.rows import add_row_words
from sizing.results import DETAIL_FIELDS, machine_row
from tests import factories
from tests.helpers import LLAMA_8B, LLAMA_8B_QLORA

pytestmark = pytest.mark.django_db

VLLM = LLAMA_8B + "&engine=vllm"
# Secure machines only, with a budget: the community RTX 3090 is an alternative, each row says what the
# budget covers in each market.
SECURE_WITH_BUDGET = VLLM + "&tier=secure&budget=100"
HTMX = {"HTTP_HX_REQUEST": "true"}
ROW = re.compile(r'<tbody class="machine-row" data-machine-id="(\d+)">.*?</tbody>', re.S)


def detail_links(page: str) -> dict[int, str]:
    """Each machine row's link to its machine's page, by machine id (as a browser follows it)."""
    links = {}
    for row in ROW.finditer(page):
        found = re.search(r'<a href="([^"]+)" data-testid="machine-detail-link">', row.group(0))
        links[int(row.group(1))] = found.group(1).replace("&amp;", "&")
    return links


def details_the_rows_wrote(query_string: str, language: str = "en") -> dict[int, str]:
    """Each row's details as the panel wrote them in every row before they were loaded when opened: the
    answer's own rows, every field, with their words (`machine_detail` is the part the rows wrote)."""
    with translation.override(language):
        answer = recommendation_for(parse_query(QueryDict(query_string)))
        rows = [machine_row(machine) for machine in (*answer.recommendation.machines,
                                                     *answer.recommendation.alternatives)]
        add_row_words(rows)
        return {row["id"]: str(machine_detail(row)) for row in rows}


@pytest.fixture
def measured(small_fleet):
    """The cheap RTX 4090 with a measured speed of Llama 3.1 8B at 16-bit."""
    factories.make_measured_speed(small_fleet["cheap_4090"], "1850.5")
    return small_fleet


def test_each_rows_details_part_is_what_the_row_wrote(client, measured):
    page = client.get(f"/?{SECURE_WITH_BUDGET}").content.decode()
    links = detail_links(page)
    expected = details_the_rows_wrote(SECURE_WITH_BUDGET)
    assert set(links) == set(expected) and len(links) == 5  # four secure machines and the 3090 alternative
    for machine_id, link in links.items():
        response = client.get(link, **HTMX)
        assert response.status_code == 200
        assert response.content.decode() == expected[machine_id]


@pytest.mark.parametrize("query", [
    LLAMA_8B_QLORA, "workload=notebook&memory_gib=20&max_price=1", "workload=image&model=stable-diffusion-xl&precision=16&requests=1",
    "workload=inference&model=whisper-large-v3&precision=16&context=4096&requests=8",
    VLLM + "&sort=price_per_million_tokens&market=any",
], ids=["fine-tune", "notebook", "image", "speech", "by-price-per-million"])
def test_every_workloads_rows_load_the_details_they_wrote(client, measured, query):
    page = client.get(f"/?{query}").content.decode()
    links = detail_links(page)
    expected = details_the_rows_wrote(query)
    assert links and set(links) == set(expected)
    for machine_id, link in links.items():
        assert client.get(link, **HTMX).content.decode() == expected[machine_id]


def test_the_part_holds_the_command_why_it_fits_limits_budget_and_measured_speed(client, measured):
    cheap = measured["cheap_4090"]
    link = detail_links(client.get(f"/?{SECURE_WITH_BUDGET}").content.decode())[cheap.id]
    part = client.get(link, **HTMX).content.decode()
    assert part.startswith('<div class="machine-detail">\n') and part.endswith("\n</div>")
    assert "<html" not in part and "launch-form" not in part
    command = re.search(rf'<code id="command-{cheap.id}" data-testid="command">([^<]+)</code>', part).group(1)
    assert command.startswith("vllm serve meta-llama/Llama-3.1-8B ")
    assert (f'<button type="button" class="copy-command" data-copy-from="command-{cheap.id}" '
            'data-copied="Copied">Copy the command</button>') in part
    assert "<strong>Why it fits</strong><ul><li>23.99 GiB of memory per GPU (datacenter figure)</li>" in part
    assert "<strong>Limits</strong><ul><li>none</li></ul>" in part
    assert "$100.00 covers 250.0 hours (10.4 days) at $0.40/h" in part
    assert ("<strong>Measured speed</strong><ul><li>1850.5 tokens/s on 1 GPU (16-bit, vLLM 0.6.3, 64 concurrent, "
            "1024 in / 128 out, measured 2025-05-01 by bench)</li>") in part


def test_a_llamacpp_rows_part_names_its_gguf_file(client, small_fleet):
    query = LLAMA_8B + "&engine=llamacpp&quantization=Q4_K_M"
    links = detail_links(client.get(f"/?{query}").content.decode())
    expected = details_the_rows_wrote(query)
    for machine_id, link in links.items():
        part = client.get(link, **HTMX).content.decode()
        assert part == expected[machine_id]
        assert ('<p class="gguf-file" data-testid="gguf-file"><strong>GGUF file</strong> '
                "<code>Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf</code> (Q4_K_M; a published file)</p>") in part
        assert ">llama-server -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -c 4096 " in part


def test_the_page_shows_the_machine_its_row_details_open_launch_and_the_way_back(client, measured):
    cheap = measured["cheap_4090"]
    panel = client.get(f"/?{SECURE_WITH_BUDGET}").content.decode()
    link = detail_links(panel)[cheap.id]
    response = client.get(link)
    assert response.status_code == 200
    page = response.content.decode()
    name = f"Harbor Compute {cheap.provider_machine_id}"
    assert f"<title>{name}: 1 × RTX 4090 · Node Lodge</title>" in page and f"<h1>{name}: 1 × RTX 4090</h1>" in page
    title = recommendation_for(parse_query(QueryDict(SECURE_WITH_BUDGET))).breakdown.title
    assert title.startswith("Llama 3.1 8B") and f'<p class="lede">Sized for {escape(title)}.</p>' in page
    assert 'aria-label="Recommended machines"' in page
    # its row's facts, its details open (the part the panel loads, whole) and its Launch form
    assert f'<tbody class="machine-row" data-machine-id="{cheap.id}">' in page
    row = next(row.group(0) for row in ROW.finditer(panel) if row.group(1) == str(cheap.id))
    assert "<strong>$0.40</strong>" in page
    assert re.search(r"<summary>.*?</summary>", row, re.S).group(0) in page  # the row's summary, as the panel has it
    assert row.split('<tr class="detail-row">')[0] in page  # and its facts, GPU link and what-if link alike
    assert '<details class="machine" open>' in page and "hx-get" not in page.split('id="machine"')[1]
    assert details_the_rows_wrote(SECURE_WITH_BUDGET)[cheap.id] in page
    assert f'<input type="hidden" name="machine" value="{cheap.id}">' in page
    assert '<input type="hidden" name="gpus" value="1">' in page
    assert '<input type="hidden" name="price_per_hour" value="0.40">' in page
    assert f'aria-label="Launch {name}: review first"' in page
    assert 'class="what-if-link"' in page and 'class="gpu-history-link"' in page  # as the row has them
    back = re.search(r'<a class="button secondary" href="([^"]+)">Back to the answer</a>', page).group(1)
    assert back.replace("&amp;", "&") == "/?" + link.split("?", 1)[1].split("&machine=")[0]


def test_an_alternatives_page_says_which_preference_it_breaks(client, measured):
    link = detail_links(client.get(f"/?{SECURE_WITH_BUDGET}").content.decode())[measured["community_3090"].id]
    page = client.get(link).content.decode()
    assert 'aria-label="Alternative machines"' in page and "breaks: " in page
    assert "Attic Hosts" in page and "RTX 3090" in page


def test_the_german_page_and_part(client, measured):
    links = detail_links(client.get(f"/de/?{SECURE_WITH_BUDGET}").content.decode())
    cheap = measured["cheap_4090"]
    assert links[cheap.id].startswith("/de/machine/?")
    part = client.get(links[cheap.id], **HTMX).content.decode()
    assert part == details_the_rows_wrote(SECURE_WITH_BUDGET, "de")[cheap.id]
    assert "<strong>Warum sie passt</strong>" in part and "Befehl kopieren" in part and "Grenzen" in part
    assert "1850,5 tokens/s auf 1 GPU" in part  # the German page's numbers
    page = client.get(links[cheap.id]).content.decode()
    assert "Zurück zur Antwort" in page and "<strong>0,40 $</strong>" in page and "Dimensioniert für Llama 3.1 8B" in page
    assert f'aria-label="Harbor Compute {cheap.provider_machine_id} starten: zuerst prüfen"' in page


def test_the_panel_writes_each_rows_summary_and_loads_its_details_when_opened(client, measured):
    page = client.get(f"/?{SECURE_WITH_BUDGET}").content.decode()
    links = detail_links(page)
    for row in ROW.finditer(page):
        html = row.group(0)
        details = re.search(r'<details class="machine" hx-get="([^"]+)" hx-trigger="toggle once" '
                            r'hx-target="find .machine-detail" hx-swap="outerHTML" hx-push-url="false">', html)
        assert details and details.group(1).replace("&amp;", "&") == links[int(row.group(1))]
        gpus = re.search(r'name="gpus" value="(\d+)"', html).group(1)
        assert details.group(1).endswith(f"&amp;machine={row.group(1)}&amp;gpus={gpus}")
        # the summary's facts stay; the details are a link to the machine's page (no JavaScript needed)
        assert "Why it fits · limits" in html and 'class="fact c-confidence"' in html
        assert 'data-testid="reliability"' in html and 'data-testid="stock"' in html
        assert ('<div class="machine-detail"><p><a href="' in html
                and ">Why it fits, its limits and the details of this machine</a></p></div>" in html)
    for written in ('data-testid="command"', "<strong>Why it fits</strong>", "<strong>Limits</strong>",
                    "<strong>Markets</strong>", "<strong>Measured speed</strong>", "copy-command"):
        assert written not in page


def test_the_panels_rows_leave_out_what_only_the_details_say_and_the_api_keeps_every_field(client, measured):
    body = client.get(f"/api/v1/recommendations?{SECURE_WITH_BUDGET}").json()
    answer = recommendation_for(parse_query(QueryDict(SECURE_WITH_BUDGET)))
    machines = answer.recommendation.machines
    assert [row["id"] for row in body["machines"]] == [machine.offer.id for machine in machines]
    for written, machine in zip(body["machines"], machines, strict=True):
        assert set(DETAIL_FIELDS) - {"quantization", "gguf_file", "gguf_published"} <= set(written)
        listed = machine_row(machine, details=False)
        assert not set(DETAIL_FIELDS) & set(listed)
        # the same keys in the same order, but for the details
        # (the API's rows link each GPU type's history besides)
        assert list(listed) == [key for key in written if key not in (*DETAIL_FIELDS, "gpu_history_url")]
        assert all(listed[key] == written[key] for key in listed if key not in ("last_seen",))


def refusal(response, status=400) -> str:
    assert response.status_code == status
    return re.search(r'data-testid="machine-problem">([^<]*)<', response.content.decode()).group(1)


def address(machine_id, query=VLLM, gpus=None, prefix="/") -> str:
    gpus_part = f"&gpus={gpus}" if gpus is not None else ""
    return f"{prefix}machine/?{query}&machine={machine_id}{gpus_part}"


def test_an_unknown_or_gone_machine_is_a_404_saying_so(client, small_fleet):
    gone = small_fleet["a100"]
    gone.gone_at = timezone.now()
    gone.save(update_fields=["gone_at"])
    for machine_id in (10**9, gone.id):
        for headers in ({}, HTMX):
            text = refusal(client.get(address(machine_id), **headers), 404)
            assert f"No machine {machine_id} is offered: it is unknown, or its provider no longer lists it." in text
    assert "Back to the answer" in client.get(address(gone.id)).content.decode()


@pytest.mark.parametrize("machine", ["", "x", "-1", "0", "1.5", "1" * 40, "١", "1,2"])
def test_a_bad_machine_value_is_refused_with_what_to_write(client, small_fleet, machine):
    assert "machine=12" in refusal(client.get(f"/machine/?{VLLM}&machine={machine}"))
    assert "machine=12" in refusal(client.get(f"/machine/?{VLLM}"))


@pytest.mark.parametrize("gpus", ["", "x", "0", "-2", "99999"])
def test_a_bad_gpus_value_is_refused_with_what_to_write(client, small_fleet, gpus):
    assert "gpus=2" in refusal(client.get(address(small_fleet["cheap_4090"].id, gpus=gpus)))


def test_a_refused_query_is_a_400_naming_the_problem(client, small_fleet):
    machine = small_fleet["cheap_4090"].id
    refused = client.get(address(machine, VLLM.replace("4096", "abc"), gpus=1))
    assert "number" in refusal(refused).lower()
    back = re.search(r'href="([^"]+)">Back to the answer<', refused.content.decode()).group(1).replace("&amp;", "&")
    assert back == "/?" + VLLM.replace("4096", "abc")  # the query as typed, without the machine
    assert "no-such-model" in refusal(client.get(address(machine, VLLM.replace("llama-3-1-8b", "no-such-model"))))
    assert "no-such-model" in refusal(client.get(address(machine, VLLM.replace("llama-3-1-8b", "no-such-model")),
                                                 **HTMX))


def not_listed(response) -> str:
    assert response.status_code == 200
    return re.search(r'data-testid="machine-not-listed">([^<]*)<', response.content.decode()).group(1)


def test_a_machine_the_answer_no_longer_lists_says_why(client, small_fleet):
    seventy_b = VLLM.replace("llama-3-1-8b", "llama-3-1-70b")
    t4 = small_fleet["t4"]
    assert not_listed(client.get(address(t4.id, seventy_b))) == (
        f"Harbor Compute {t4.provider_machine_id} no longer fits this query (too small); the answer lists the "
        "machines that do.")
    offline = small_fleet["offline"].id
    assert "(offline or out of stock)" in not_listed(client.get(address(offline)))
    stale = small_fleet["stale"].id
    part = client.get(address(stale), **HTMX)
    assert "(not heard from recently)" in not_listed(part)
    assert part.content.decode().startswith('<div class="machine-detail"><p class="notice"')
    assert "(outside the chosen countries)" in not_listed(client.get(address(small_fleet["a100"].id,
                                                                             VLLM + "&countries=DE")))


def test_a_row_whose_gpus_changed_says_so_beside_its_details(client, small_fleet):
    h100 = small_fleet["h100x8"]
    expected = details_the_rows_wrote(VLLM)[h100.id]
    same = client.get(address(h100.id, gpus=1), **HTMX).content.decode()
    assert same == expected
    changed = client.get(address(h100.id, gpus=2), **HTMX).content.decode()
    assert changed.startswith('<p class="notice" role="status" data-testid="machine-changed">The machine&#x27;s '
                              "figures changed since its row was shown: it now uses 1 × H100 SXM 80GB, not 2.</p>")
    assert changed.endswith(expected)
    assert "not 2." in client.get(address(h100.id, gpus=2)).content.decode()


def test_one_machine_is_read_whatever_the_fleet_and_the_query_ask(client, small_fleet, make_machine):
    cheap = small_fleet["cheap_4090"].id

    def statements(query):
        with CaptureQueriesContext(connection) as captured:
            assert client.get(address(cheap, query), **HTMX).status_code == 200
        return len(captured)

    before = statements(VLLM)
    for number in range(30):
        make_machine("RTX 4090", price_per_gpu_hour=Decimal("0.30") + Decimal(number) / 100)
    assert statements(VLLM) == before
    assert statements(VLLM + "&limit=200&sort=price_per_million_tokens&target_tokens=90000") == before
