"""Every published vLLM start-up log against the vLLM budget (ACCURACY.md, "Serving under vLLM")."""
from fractions import Fraction

import pytest

from tests.accuracy import vllm_startup

ROWS = vllm_startup.load()


def test_the_log_file_holds_every_published_start_up_and_one_failure():
    assert len(ROWS) == 11
    assert len({row.case_id for row in ROWS}) == len(ROWS)
    assert sum(not row.started for row in ROWS) == 1


@pytest.mark.parametrize("row", ROWS, ids=[row.case_id for row in ROWS])
def test_weights_as_loaded_are_within_5_percent_of_the_log(row):
    budget = row.predict()
    assert abs(Fraction(budget.weights.bytes - row.weights_bytes, row.weights_bytes)) <= Fraction(5, 100)


@pytest.mark.parametrize("row", [r for r in ROWS if r.started], ids=[r.case_id for r in ROWS if r.started])
def test_the_pool_in_tokens_is_within_minus_15_plus_5_percent_of_the_log(row):
    budget = row.predict()
    error = Fraction(budget.kv_cache_tokens - row.kv_cache_tokens, row.kv_cache_tokens)
    assert Fraction(-15, 100) <= error <= Fraction(5, 100), f"{row.case_id}: {float(error):+.3%}"
    assert budget.fit(row.max_model_len, 1) == (True, None)


@pytest.mark.parametrize("row", [r for r in ROWS if not r.started], ids=[r.case_id for r in ROWS if not r.started])
def test_a_start_up_that_failed_is_predicted_not_to_fit_with_its_reason(row):
    fits, reason = row.predict().fit(row.max_model_len, 1)
    assert fits is False
    assert "max_model_len" in reason


@pytest.mark.parametrize(
    "row", [r for r in ROWS if r.max_concurrency is not None], ids=[r.case_id for r in ROWS if r.max_concurrency]
)
def test_the_logged_concurrency_is_never_promised_5_percent_above(row):
    predicted = row.predict().max_concurrency(row.max_model_len)
    assert predicted <= Fraction(row.max_concurrency) * Fraction(105, 100)
    assert predicted >= Fraction(row.max_concurrency) * Fraction(85, 100)


def test_every_row_holds_the_rule_as_the_accuracy_page_says():
    results = vllm_startup.verdicts()
    assert all(verdict.holds for verdict in results)
    assert vllm_startup.summary(results).startswith(f"**{len(ROWS)} of {len(ROWS)} start-up logs hold")
