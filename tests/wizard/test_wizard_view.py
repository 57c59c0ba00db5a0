import re
from decimal import Decimal

import pytest
from django.urls import reverse

from catalog import services
from catalog.fleets import generate_fleet
from tests.helpers import LLAMA_8B, llama_8b, with_details_opened

pytestmark = pytest.mark.django_db

HX_RESULT = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "result"}


def result_section(html: str) -> str:
    match = re.search(r'<section id="result".*?</section>', html, re.S)
    assert match, "the page has no result section"
    return match.group(0)


def without_tokens(html: str) -> str:
    """Launch forms carry a fresh CSRF token and idempotency key on every render."""
    html = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", html)
    html = re.sub(r'name="idempotency_key" value="[0-9a-f]+"', "", html)
    return re.sub(r"Availability as of [^;.]+", "", html)


def test_empty_page_shows_the_three_steps_and_no_result(client, small_fleet):
    response = client.get(reverse("wizard:start"))
    html = response.content.decode()
    assert response.status_code == 200
    for legend in ("What you want to do", "Which model", "Budget and preferences"):
        assert legend in html
    assert "Your result appears here" in html


def test_result_shows_the_spec_worked_example_and_machines_cheapest_first(client, small_fleet):
    html = client.get("/?" + LLAMA_8B).content.decode()
    assert "19.55 GiB" in html
    for figure in ("14.96", "0.50", "3.09", "1.00"):
        assert f'<td class="num">{figure}</td>' in html
    ids = [int(i) for i in re.findall(r'data-machine-id="(\d+)"', result_section(html))]
    # The T4 (15 GiB) is too small for one GPU and has only one; the 3090 is Community (allowed).
    expected = [small_fleet[k].pk for k in ("community_3090", "cheap_4090", "l40s", "a100", "h100x8")]
    assert ids == expected


def test_htmx_partial_renders_the_same_result_as_the_full_page(client, small_fleet):
    full = client.get("/?" + LLAMA_8B).content.decode()
    response = client.get("/?" + LLAMA_8B + "&shown=inference:language:ok", **HX_RESULT)
    partial = response.content.decode()
    assert "<html" not in partial and "HX-Retarget" not in response
    assert response["HX-Push-Url"] == "/?" + LLAMA_8B + "&tier=both"
    # The partial also carries the form's "Selected" line, swapped out of band.
    oob = re.search(r'\s*<p class="selected-model" id="selected-model" hx-swap-oob="true">.*?</p>', partial).group(0)
    assert 'data-testid="selected-name">Llama 3.1 8B<' in oob
    def squeezed(html):
        return re.sub(r"\s+", " ", without_tokens(html)).strip()

    assert squeezed(partial.replace(oob, "")) == squeezed(result_section(full))


def test_htmx_workload_switch_renders_the_whole_wizard_with_new_labels(client, small_fleet):
    html = client.get(
        "/?workload=finetune&model=llama-3-1-8b&precision=4&context=2048&requests=2",
        HTTP_HX_REQUEST="true", HTTP_HX_TARGET="wizard",
    ).content.decode()
    assert html.lstrip().startswith('<div id="wizard"')
    assert "Sequence length (tokens)" in html and "Batch size" in html
    assert "Concurrent requests" not in html


def test_choosing_a_speech_model_sends_the_whole_wizard_for_its_labels(client, small_fleet):
    response = client.get(
        "/?workload=inference&model=whisper-small&precision=16&context=4096&requests=2&shown=inference:language:ok",
        **HX_RESULT,
    )
    assert response["HX-Retarget"] == "#wizard"
    assert "Concurrent audio streams" in response.content.decode()


def test_speech_model_asks_for_audio_streams_and_hides_the_context(client, small_fleet):
    html = client.get("/?workload=inference&model=whisper-large-v3&precision=16&requests=8").content.decode()
    assert "Concurrent audio streams" in html
    assert 'name="context"' not in html
    assert "Decoder KV cache" in html


def test_image_workload_hides_context_and_requests_and_says_one_image(client, small_fleet):
    html = client.get("/?workload=image&model=stable-diffusion-xl&precision=16").content.decode()
    assert 'name="context"' not in html and 'name="requests"' not in html
    assert "native resolution" in html
    assert 'class="badge low"' in html  # image results are always low confidence


def test_notebook_asks_for_memory_only(client, small_fleet):
    html = client.get("/?workload=notebook&memory_gib=30").content.decode()
    assert 'name="memory_gib"' in html and 'name="model"' not in html
    assert "30.00 GiB" in html


def test_switching_workload_swaps_in_a_model_that_suits_it(client, small_fleet):
    html = client.get("/?workload=image&model=llama-3-1-8b&precision=16").content.decode()
    assert 'value="stable-diffusion-xl" checked' in html


@pytest.mark.parametrize(
    ("query", "field", "words"),
    [
        (llama_8b(context=200000), "context", "131,072"),
        (llama_8b(requests=0), "requests", "Concurrent requests must be at least 1."),
        (llama_8b(requests=2.5), "requests",
         "Concurrent requests must be a whole number"),
        (llama_8b(context=-5), "context",
         "Context must be at least 1 token."),
        (llama_8b(context=20000000), "context",
         "Context can be at most 10,000,000 tokens."),
        (LLAMA_8B + "&budget=-50", "budget", "The budget must be more than $0"),
        (LLAMA_8B + "&max_price=0", "max_price", "The max price must be more than $0 per hour"),
        (LLAMA_8B + "&countries=DE,XX", "countries", "XX is not an ISO country code"),
        (LLAMA_8B + "&countries=UK", "countries", "UK is not an ISO code: did you mean GB?"),
        (LLAMA_8B + "&sort=nonsense", "sort", "Sort by one of: price,"),
        ("workload=inference&model=gpt-oss-120b&precision=8&context=4096&requests=1", "precision",
         "no 8-bit checkpoint"),
        (LLAMA_8B + "&kv_cache=4", "kv_cache", "16-bit or an 8-bit KV cache"),
        ("workload=inference&model=no-such-model&precision=16&context=4096&requests=1", "model", "no-such-model"),
        ("workload=notebook&memory_gib=abc", "memory_gib", "number"),
    ],
)
def test_bad_input_is_explained_beside_its_field(client, small_fleet, query, field, words):
    response = client.get("/?" + query)
    html = response.content.decode()
    assert response.status_code == 200
    match = re.search(rf'<p class="field-error" id="err-{field}"[^>]*>([^<]*)</p>', html)
    assert match, f"no error beside {field}"
    assert words.lower() in match.group(1).lower()


def test_empty_result_names_the_constraint_to_relax(client, small_fleet):
    html = client.get("/?" + LLAMA_8B + "&max_price=0.20").content.decode()
    assert 'data-testid="empty-reason"' in html
    reason = re.search(r'data-testid="empty-reason">(.*?)</div>', html, re.S).group(1)
    assert "price" in reason.lower()


def test_unknown_memory_and_unknown_location_are_never_offered(client, small_fleet):
    html = client.get("/?" + LLAMA_8B + "&tier=secure&max_price=0.5").content.decode()
    ids = set(re.findall(r'data-machine-id="(\d+)"', html))
    for key in ("no_memory", "no_country", "offline", "stale"):
        assert str(small_fleet[key].pk) not in ids


def test_eu_shortcut_keeps_only_member_states(client, small_fleet):
    html = client.get("/?" + LLAMA_8B + "&countries=EU").content.decode()
    ids = set(re.findall(r'data-machine-id="(\d+)"', html))
    assert str(small_fleet["a100"].pk) not in ids  # US
    assert str(small_fleet["h100x8"].pk) in ids  # FR
    assert "AT, BE, BG" in html  # EU expanded under constraints applied


def test_result_has_a_url_that_reproduces_it(client, small_fleet):
    html = client.get("/?" + LLAMA_8B + "&budget=100").content.decode()
    link = re.search(r'<a href="\?([^"]+)" data-testid="permalink"', html).group(1).replace("&amp;", "&")
    again = client.get("/?" + link).content.decode()
    assert without_tokens(result_section(again)) == without_tokens(result_section(html))


def test_community_notice_appears_with_community_machines(client, small_fleet):
    html = client.get("/?" + LLAMA_8B).content.decode()
    assert "the host can read the session" in html
    secure_only = client.get("/?" + LLAMA_8B + "&tier=secure&countries=US").content.decode()
    assert "the host can read the session" not in secure_only


def test_tiers_page_explains_secure_and_community(client, db):
    html = client.get(reverse("wizard:tiers")).content.decode()
    assert "Secure" in html and "Community" in html and "can read your session" in html


@pytest.mark.parametrize("machines", [10, 1000])
def test_query_count_does_not_grow_with_the_fleet(client, models_and_gpus, django_assert_max_num_queries, machines):
    generate_fleet(machines=machines, seed=7)
    with django_assert_max_num_queries(12):
        response = client.get("/?" + LLAMA_8B + "&budget=100&shown=inference:language:ok", **HX_RESULT)
    assert response.status_code == 200
    assert "Recommended machines" in response.content.decode()


def test_machines_of_a_deactivated_provider_are_not_recommended(client, small_fleet, providers):
    before = result_section(client.get("/?" + LLAMA_8B).content.decode())
    assert "Harbor Compute" in before
    providers["secure"].is_active = False
    services.save_provider(providers["secure"])
    after = result_section(client.get("/?" + LLAMA_8B).content.decode())
    assert "Harbor Compute" not in after and "Attic Hosts" in after


def test_a_price_is_shown_as_priced_beside_what_the_budget_covers(client, make_machine):
    make_machine("A100 80GB", price_per_gpu_hour=Decimal("0.098"))
    html = result_section(with_details_opened(client, client.get("/?" + LLAMA_8B + "&budget=100").content.decode()))
    assert "$0.098" in html and "$0.10" not in html
    assert "$100.00 covers 1,020.4 hours (42.5 days) at $0.098/h" in html
    assert 'name="price_per_hour" value="0.098"' in html


def test_the_page_lists_at_most_its_own_limit_of_machines_and_says_the_api_lists_more(client, small_fleet):
    """A page of 1,000 rows costs seconds of template: the page refuses more than PAGE_MAX_LIMIT in words
    beside what was asked, and the API still lists up to MAX_LIMIT."""
    query = LLAMA_8B
    page = client.get(f"/?{query}&limit=201").content.decode()
    assert "The page lists at most 200 machines per page; the API lists up to 1,000." in page
    assert 'id="machines"' not in page and 'id="machines"' in client.get(f"/?{query}&limit=200").content.decode()
    assert client.get(f"/?{query}&limit=200").status_code == 200
    assert client.get(f"/api/v1/recommendations?{query}&limit=1000").status_code == 200
    german = client.get(f"/de/?{query}&limit=201").content.decode()
    assert "Die Seite listet höchstens 200 Maschinen pro Seite; die API bis zu 1.000." in german

