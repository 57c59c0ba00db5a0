"""The published start-up logs not handed over, held to issue #43's tolerances as ACCURACY.md shows them."""
from tests.accuracy import not_handed, vllm_startup

ROWS = not_handed.load()


def test_the_set_is_apart_from_the_handed_logs_and_every_row_names_its_source_and_lines():
    handed = {row.case_id for row in vllm_startup.load()}
    assert len(ROWS) == 16 and len({row.case_id for row in ROWS}) == 16
    assert not handed & {row.case_id for row in ROWS}
    for row in ROWS:
        assert row.source_url and row.source_lines, row.case_id
        assert row.started == (not row.failure), row.case_id


def test_the_weights_and_pools_hold_except_the_one_class_the_page_names():
    results = not_handed.verdicts()
    assert all(v.weights_hold for v in results if v.weights_hold is not None)
    assert [v.log.case_id for v in results if v.pool_holds is False] == ["vllm084-qwen25-7b-rtx3090-tp2-u080-4k"]
    assert [v.log.case_id for v in results if not v.start_holds] == ["llmd-gpt-oss-20b-h100-tp1-8k-fail"]


def test_the_summary_counts_what_the_table_shows():
    results = not_handed.verdicts()
    assert not_handed.summary(results).startswith("**14 of 16 logs not handed over hold every figure.**")
    table = not_handed.table(results)
    assert table.count("\n") == len(results) + 1 and table.count("**NO**") == 2


def test_a_start_that_failed_holds_only_when_answered_does_not_start_with_a_reason():
    [failed] = [v for v in not_handed.verdicts() if not v.log.started]
    assert failed.ours.starts and not failed.start_holds
    refused = not_handed.Verdict(failed.log, not_handed.Prediction(failed.ours.weights_bytes, 0, False, "why"))
    assert refused.start_holds and refused.holds
    silent = not_handed.Verdict(failed.log, not_handed.Prediction(failed.ours.weights_bytes, 0, False, None))
    assert not silent.start_holds
