"""Pages in the console's look, compressed answers, and the models the list cannot size."""
import gzip
import re

import pytest
from django.test import override_settings

from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db


GZIP = {"HTTP_ACCEPT_ENCODING": "gzip"}


def test_a_model_whose_memory_cannot_be_computed_is_not_offered(client, small_fleet):
    from catalog.models import LanguageModel

    # A copy of a shipped model whose KV-head count is not published.
    row = LanguageModel.objects.get(slug="llama-3-1-8b")
    row.pk, row.slug, row.name, row.kv_heads = None, "unpublished-8b", "Unpublished 8B", None
    row.save()
    html = client.get("/?workload=inference").content.decode()
    label = re.search(r'<label for="model-unpublished-8b" class="unavailable">.*?</label>', html, re.S).group(0)
    assert 'disabled aria-describedby="missing-unpublished-8b"' in label
    assert "memory cannot be computed: kv_heads not published" in label
    assert 'class="unavailable"' not in html.split('for="model-llama-3-1-8b"')[1][:20]


def test_selecting_a_model_updates_the_selected_line_with_the_result(client, small_fleet):
    query = "workload=inference&model=llama-3-1-70b&precision=16&context=4096&requests=1&shown=inference:language:ok"
    html = client.get("/?" + query, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="result").content.decode()
    assert re.search(r'id="selected-model" hx-swap-oob="true">Selected: <strong data-testid="selected-name">'
                     r'Llama 3.1 70B<', html)


@pytest.mark.parametrize("debug", [False, True])
def test_a_missing_page_is_the_consoles_own_without_a_list_of_urls(client, debug):
    with override_settings(DEBUG=debug):
        response = client.get("/no/such/page/")
    html = response.content.decode()
    assert response.status_code == 404
    assert "Page not found" in html and 'class="topbar"' in html
    assert "URLconf" not in html and "api/v1/" not in html.split("</header>")[1]


def test_an_unexpected_error_page_is_the_consoles_own(client, rf):
    from nodelodge.hardening.errors import server_error

    response = server_error(rf.get("/"))
    html = response.content.decode()
    assert response.status_code == 500 and "Something went wrong" in html and 'class="topbar"' in html
    assert "Traceback" not in html


def test_pages_swaps_and_json_are_compressed(client, small_fleet):
    for path, extra in (("/?" + LLAMA_8B, {}), ("/api/v1/recommendations?" + LLAMA_8B, {}),
                        ("/?" + LLAMA_8B + "&shown=inference:language:ok",
                         {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "result"})):
        response = client.get(path, **GZIP, **extra)
        assert response["Content-Encoding"] == "gzip", path
        assert len(gzip.decompress(response.content)) > 3 * len(response.content)


PAGE_BUDGET = 60 * 1024  # the result page with its CSS and JavaScript, as transferred
SWAP_BUDGET = 20 * 1024  # one HTMX swap of the result, as transferred


def transferred_static(html: str) -> dict[str, int]:
    """The page's own CSS and JavaScript, compressed as the GZip middleware compresses them."""
    from django.contrib.staticfiles import finders
    from django.utils.text import compress_string

    sizes = {}
    for path in re.findall(r'(?:href|src)="/static/([^"]+\.(?:css|js))"', html):
        with open(finders.find(path), "rb") as handle:
            sizes[path] = len(compress_string(handle.read()))
    return sizes


@pytest.fixture
def shipped_catalog(db):
    from catalog.services import load_catalog

    load_catalog()


def test_the_result_page_and_a_swap_fit_their_weight_budgets(client, shipped_catalog):
    """The 8B example over the shipped catalog and demo fleet: a full first page of machines."""
    page = client.get("/?" + LLAMA_8B, **GZIP)
    html = gzip.decompress(page.content).decode()
    static = transferred_static(html)
    assert set(static) == {"css/console.css", "vendor/htmx.min.js", "js/console.js"}
    total = len(page.content) + sum(static.values())
    assert total <= PAGE_BUDGET, f"page {len(page.content)} + static {static} = {total} bytes"
    swap = client.get("/?" + LLAMA_8B + "&shown=inference:language:ok", HTTP_HX_REQUEST="true",
                      HTTP_HX_TARGET="result", **GZIP)
    assert "HX-Retarget" not in swap
    assert len(swap.content) <= SWAP_BUDGET, f"swap {len(swap.content)} bytes"
    print(f"\nweight: page {len(page.content)} B gzip ({len(html)} B raw), static {static}, total {total} B;"
          f" swap {len(swap.content)} B gzip ({len(gzip.decompress(swap.content))} B raw)")
