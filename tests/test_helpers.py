"""The example query's variants and the race harness the test packages share (tests/helpers.py)."""
import threading
import time

import pytest

from tests.helpers import LLAMA_8B, LLAMA_8B_QLORA, LLAMA_8B_TOO_BIG, llama_8b, race_outcomes, race_together


def test_the_example_query_changes_fields_in_place_and_adds_new_ones_at_the_end():
    assert llama_8b() == LLAMA_8B
    assert llama_8b(context=131072, requests=2000) == LLAMA_8B_TOO_BIG
    assert llama_8b(workload="finetune", precision=4, requests=4) == LLAMA_8B_QLORA
    assert llama_8b(requests="NaN", engine="vllm") == (
        "workload=inference&model=llama-3-1-8b&precision=16&context=4096&requests=NaN&engine=vllm"
    )


def test_raced_calls_start_together_and_give_each_outcome_in_order():
    started: list[float] = []
    lock = threading.Lock()

    def call(value):
        def run():
            with lock:
                started.append(time.monotonic())
            if isinstance(value, Exception):
                raise value
            return value

        return run

    refused = ValueError("refused")
    outcomes = race_outcomes([call(1), call(refused), call(3)])

    assert outcomes == [1, refused, 3]
    assert len(started) == 3 and max(started) - min(started) < 5  # let go at one barrier


def test_racing_together_raises_what_a_call_raised():
    def refused():
        raise LookupError("the last GPU was taken")

    with pytest.raises(LookupError, match="the last GPU was taken"):
        race_together([lambda: None, refused])
