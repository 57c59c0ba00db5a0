"""Under vLLM an empty answer names the largest context and request count that fit, from what each GPU
type holds (the machine rows' capacity figures), not only the largest halving."""
import re

import pytest

pytestmark = pytest.mark.django_db

# At vLLM 0.19. The hint's figures are what each GPU type holds at the asked requests, whose sampler step
# (max_num_seqs) is larger than at the figure named: at 0.27.1 8 × H100 hold 31 requests of 131,072 tokens
# asked at 2,000 and 32 asked at 32, so the hint names the halving 31 where 32 opens a machine.
BASE = "workload=inference&model=llama-3-1-8b&precision=16&engine=vllm&engine_version=0.19&context={c}&requests={r}"


def answer(client, context, requests):
    return client.get("/api/v1/recommendations?" + BASE.format(c=context, r=requests)).json()


@pytest.mark.parametrize(("field", "words"), [
    ("c", r"a context of ([\d,]+) tokens fits on (\d+) machines?"),
    ("r", r"([\d,]+) concurrent requests fit on (\d+) machines?"),
])
def test_the_size_hints_name_a_figure_a_machine_holds_and_it_opens_what_they_say(client, small_fleet, field, words):
    empty = answer(client, 131072, 2000)
    assert empty["machines"] == []
    match = re.search(words, empty["empty_reason"])
    assert match, empty["empty_reason"]
    value, count = int(match.group(1).replace(",", "")), int(match.group(2))
    at = {"c": 131072, "r": 2000, field: value}
    opened = answer(client, at["c"], at["r"])
    assert opened["machines_total"] == count > 0
    # the figure is what the machine that opens holds, as its row says it
    row = opened["machines"][0]
    held = row["max_context_at_requests"] if field == "c" else row["max_requests_at_context"]
    assert held >= value
    halvings = {2000 // 2**k for k in range(1, 12)} if field == "r" else {131072 // 2**k for k in range(1, 18)}
    more = {"c": 131072, "r": 2000, field: value + 1}
    assert value not in halvings or answer(client, more["c"], more["r"])["machines_total"] == 0
