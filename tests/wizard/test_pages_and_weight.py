"""Pages in the console's look, compressed answers, and the models the list cannot size."""
import gzip
import re

import pytest
from django.test import override_settings

from .conftest import LLAMA_8B

pytestmark = pytest.mark.django_db

GZIP = {"HTTP_ACCEPT_ENCODING": "gzip"}


def test_a_model_whose_memory_cannot_be_computed_is_not_offered(client, small_fleet):
    html = client.get("/?workload=inference").content.decode()
    row = re.search(r'<label for="model-deepseek-v3" class="unavailable">.*?</label>', html, re.S).group(0)
    assert 'disabled aria-describedby="missing-deepseek-v3"' in row
    assert "memory cannot be computed:" in row and "not published" in row


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
