"""No number changes silently: the wizard's whole-number fields are text boxes the page's language
reads (a browser's number box turns "2,5" into 25 and empties "abc"), so a value that is not a whole
number gets the field's message and stays in the box as typed."""
import html as html_lib
import re

import pytest

from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db

FINETUNE = "workload=finetune&model=llama-3-1-8b&precision=16&context=4096&requests=1"


def field_input(html: str, field: str) -> str:
    match = re.search(rf'<input [^>]*name="{field}"[^>]*>', html)
    assert match, f"no input {field}"
    return match.group(0)


def field_error(html: str, field: str) -> str:
    match = re.search(rf'<p class="field-error" id="err-{field}"[^>]*>([^<]*)</p>', html)
    assert match, f"no message beside {field}"
    return html_lib.unescape(match.group(1))


@pytest.mark.parametrize("field", ["context", "requests"])
def test_the_wizards_whole_number_boxes_are_text_boxes_the_page_reads(client, small_fleet, field):
    box = field_input(client.get(f"/?{LLAMA_8B}").content.decode(), field)
    assert 'type="text"' in box and 'inputmode="numeric"' in box


@pytest.mark.parametrize(
    ("path", "typed", "message"),
    [("/", "2,5", "Concurrent requests must be a whole number, such as 1 or 8."),
     ("/de/", "2,5", "Gleichzeitige Anfragen müssen eine ganze Zahl sein, etwa 1 oder 8.")],
)
def test_a_fractional_request_count_gets_its_message_and_stays_as_typed(client, small_fleet, path, typed, message):
    query = LLAMA_8B.replace("requests=1", f"requests={typed}")
    html = client.get(f"{path}?{query}").content.decode()
    assert field_error(html, "requests") == message
    box = field_input(html, "requests")
    assert f'value="{typed}"' in box and 'type="text"' in box


def test_a_lora_rank_that_is_not_a_number_gets_its_message_and_stays_as_typed(client, small_fleet):
    html = client.get(f"/?{FINETUNE}&lora_rank=abc").content.decode()
    assert field_error(html, "lora_rank") == "The LoRA rank must be a whole number, such as 16."
    box = field_input(html, "lora_rank")
    assert 'value="abc"' in box and 'type="text"' in box
