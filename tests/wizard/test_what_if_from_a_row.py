"""From a vLLM result to the GPU what-if: each machine row links to the calculators page prefilled
with its GPU type, its GPU count and the query (model, precisions, context, requests), and the link
opens a what-if that starts; a setting that does not start offers no command, on the page or the API."""
import html as html_lib
import re
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db

VLLM = LLAMA_8B.replace("context=4096", "context=8192").replace("requests=1", "requests=4") + "&engine=vllm"
TOO_LARGE = "model=llama-3-1-70b&gpu_memory_gib=79.19&max_model_len=16000"


def what_if_links(html: str) -> list[str]:
    return [html_lib.unescape(href) for href in re.findall(r'<a href="([^"]*)" class="what-if-link"', html)]


def test_every_vllm_machine_row_links_to_the_what_if_with_its_gpus_and_the_query(client, small_fleet):
    html = client.get(f"/?{VLLM}").content.decode()
    rows = re.findall(r'<tbody class="machine-row".*?</tbody>', html, re.S)
    links = what_if_links(html)
    assert rows and len(links) == len(rows)
    for row, link in zip(rows, links, strict=True):
        gpus, gpu_type = re.search(r"<strong>(\d+) ×</strong> (?:<a [^>]*>)?([^<]+)(?:</a>)?</span>", row).groups()
        address = urlsplit(link)
        assert address.path == "/calculators/"
        asked = {name: values[0] for name, values in parse_qs(address.query).items()}
        assert asked == {"model": "llama-3-1-8b", "precision": "16", "kv_cache": "16", "engine": "vllm",
                         "max_model_len": "8192", "max_num_seqs": "4", "gpu": html_lib.unescape(gpu_type),
                         "tensor_parallel": gpus}
    # Rows not sized for vLLM have no what-if to open.
    assert what_if_links(client.get(f"/?{LLAMA_8B}").content.decode()) == []


def test_the_rows_link_opens_a_what_if_for_that_gpu_type(client, small_fleet):
    link = what_if_links(client.get(f"/?{VLLM}").content.decode())[0]
    html = client.get(link).content.decode()
    assert 'data-testid="what-if-result"' in html and "Starts" in html
    assert "--max-model-len 8192" in html


def test_the_german_rows_link_to_the_german_what_if(client, small_fleet):
    links = what_if_links(client.get(f"/de/?{VLLM}").content.decode())
    assert links and all(urlsplit(link).path == "/de/calculators/" for link in links)


def test_a_what_if_that_does_not_start_offers_no_command_on_the_page(client, models_and_gpus):
    html = client.get(f"/calculators/?{TOO_LARGE}").content.decode()
    assert "Does not start" in html
    assert 'data-testid="what-if-command"' not in html and "vllm serve" not in html


def test_a_what_if_that_does_not_start_answers_no_command_in_the_api(client, models_and_gpus):
    answer = client.get(f"/api/v1/capacity?{TOO_LARGE}").json()
    assert answer["fits"] is False
    assert answer["command"] is None
