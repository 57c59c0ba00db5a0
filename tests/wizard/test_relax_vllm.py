"""Under vLLM an empty answer names the largest context and request count that fit, from what each GPU
type holds (the machine rows' capacity figures), not only the largest halving."""
import re

import pytest

pytestmark = pytest.mark.django_db

# The hint's figures are what each GPU type holds asked at that figure: at 0.21 on, 8 × H100 hold 31
# requests of 131,072 tokens asked at 2,000 and 32 asked at 32 (the sampler step follows max_num_seqs),
# so the hint names 32, the figure that opens a machine. Held on the release before the graphs moved
# inside the budget and on the default.
BASE = ("workload=inference&model=llama-3-1-8b&precision=16&engine=vllm&engine_version={v}"
        "&context={c}&requests={r}")


@pytest.fixture(params=["0.19", ""], ids=["0.19", "default"])
def release(request):
    return request.param


def answer(client, context, requests, release):
    return client.get("/api/v1/recommendations?" + BASE.format(v=release, c=context, r=requests)).json()


@pytest.mark.parametrize(("field", "words"), [
    ("c", r"a context of ([\d,]+) tokens fits on (\d+) machines?"),
    ("r", r"([\d,]+) concurrent requests fit on (\d+) machines?"),
])
def test_the_size_hints_name_a_figure_a_machine_holds_and_it_opens_what_they_say(
    client, small_fleet, field, words, release
):
    empty = answer(client, 131072, 2000, release)
    assert empty["machines"] == []
    match = re.search(words, empty["empty_reason"])
    assert match, empty["empty_reason"]
    value, count = int(match.group(1).replace(",", "")), int(match.group(2))
    at = {"c": 131072, "r": 2000, field: value}
    opened = answer(client, at["c"], at["r"], release)
    assert opened["machines_total"] == count > 0
    # the figure is what the machine that opens holds, as its row says it
    row = opened["machines"][0]
    held = row["max_context_at_requests"] if field == "c" else row["max_requests_at_context"]
    assert held >= value
    # and it is the largest that does: one more opens nothing
    more = {"c": 131072, "r": 2000, field: value + 1}
    assert answer(client, more["c"], more["r"], release)["machines_total"] == 0
