"""SGLang's static pool holds against every SGLang start-up ACCURACY.md lists."""
from tests.accuracy import sglang


def test_every_logged_sglang_start_up_holds():
    found = sglang.verdicts()
    assert [verdict.case for verdict in found] == ["sglang-qwq32b-bf16-a800-tp1-mf098-ctx4096"]
    assert [verdict.case for verdict in found if not verdict.holds] == []


def test_the_qwq_pool_is_within_a_few_tokens_per_thousand():
    [qwq] = sglang.verdicts()
    assert abs(qwq.pool_ratio - 1) < 0.01 and abs(qwq.weights_ratio - 1) < 0.01
