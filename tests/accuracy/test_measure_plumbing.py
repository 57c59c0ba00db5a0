"""The accuracy script's plumbing, run end to end on the CPU with tiny models.

What the CPU run measures is process memory, so these tests check the wiring (cases run, the sizing
engine is asked the same question, the table and the raw figures are written), not the figures.
"""
import json

import pytest

from sizing.calculators import (
    estimate_finetune,
    estimate_inference,
    estimate_speech,
    lora_trainable_parameters,
)
from sizing.units import gib_display
from tests.accuracy import measure

TINY_CASES = ["inference:llama-3-2-1b:32x2", "finetune:llama-3-2-1b:16x2", "speech:whisper-large-v3:2"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("accuracy")
    out, raw = folder / "ACCURACY.md", folder / "accuracy.json"
    code = measure.main(["--device", "cpu", "--tiny", "--cases", *TINY_CASES, "--out", str(out),
                         "--json", str(raw)])
    return code, out, json.loads(raw.read_text())


def _rows_by_case(raw):
    return {row["case"]: row for row in raw["rows"]}


def _table_row(document, case_id):
    (line,) = [line for line in document.splitlines() if line.startswith(f"| `{case_id}` |")]
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_tiny_cpu_run_writes_a_table_row_for_each_case(tiny_run):
    code, out, raw = tiny_run
    assert code == 0
    document = out.read_text()
    assert "not GPU memory" in document
    assert raw["mode"] == "cpu"
    assert [row["case"] for row in raw["rows"]] == TINY_CASES
    for case_id in TINY_CASES:
        assert _rows_by_case(raw)[case_id]["status"] == "measured"
        assert _table_row(document, case_id)[0] == f"`{case_id}`"


def test_estimate_column_is_the_sizing_engines_answer_for_the_tiny_inputs(tiny_run):
    _, out, raw = tiny_run
    document = out.read_text()
    rows = _rows_by_case(raw)
    tiny_language = measure.language_spec("llama-3-2-1b", tiny=True)
    tiny_whisper = measure.speech_spec("whisper-large-v3", tiny=True)
    expected = {
        "inference:llama-3-2-1b:32x2": estimate_inference(tiny_language, 16, 32, 2).total_bytes,
        "finetune:llama-3-2-1b:16x2": estimate_finetune(tiny_language, 16, 16, 2).total_bytes,
        "speech:whisper-large-v3:2": estimate_speech(tiny_whisper, 16, 2, beams=1).total_bytes,
    }
    for case_id, total_bytes in expected.items():
        assert rows[case_id]["estimate_bytes"] == total_bytes
        assert _table_row(document, case_id)[1] == gib_display(total_bytes)


def test_tiny_specs_describe_the_models_that_were_really_built(tiny_run):
    _, _, raw = tiny_run
    rows = _rows_by_case(raw)
    for case_id in TINY_CASES:
        assert rows[case_id]["details"]["parameters_built"] == rows[case_id]["spec_parameters"]


def test_held_cache_and_adapters_match_the_estimates_items(tiny_run):
    """Where nothing differs by design (no sliding window, separate q/k/v), the measured pieces are
    exactly the estimate's items: the check the GPU run makes at full size."""
    _, _, raw = tiny_run
    rows = _rows_by_case(raw)
    items = {case_id: {i["name"]: i["bytes"] for i in rows[case_id]["estimate_items"]} for case_id in TINY_CASES}
    assert rows["inference:llama-3-2-1b:32x2"]["details"]["kv_cache_bytes"] == \
        items["inference:llama-3-2-1b:32x2"]["KV cache"]
    assert rows["speech:whisper-large-v3:2"]["details"]["kv_cache_bytes"] == \
        items["speech:whisper-large-v3:2"]["Decoder KV cache"]
    finetune = rows["finetune:llama-3-2-1b:16x2"]["details"]
    assert finetune["trainable_parameters"] == lora_trainable_parameters(
        measure.language_spec("llama-3-2-1b", tiny=True), 16)
    assert finetune["optimizer_steps"] == 2 and len(finetune["losses"]) == 2


def test_measured_figures_on_the_cpu_carry_no_ratio(tiny_run):
    _, out, raw = tiny_run
    for row in raw["rows"]:
        assert row["measured"]["kind"] == "cpu-rss"
        assert row["ratio"] is None
        assert _table_row(out.read_text(), row["case"])[4] == "—"


def test_a_case_runs_in_a_process_of_its_own():
    case = measure.select_cases(["inference:phi-3-mini-4k:32x2"], tiny=True)[0]
    result = measure.measure_case_isolated(case, "cpu", True, measure.TINY_PREFILL_CHUNK, timeout_s=120)
    assert result["status"] == "measured", result
    # Phi-3 keeps a sliding window of 24 - 1 tokens in every layer: fewer than the 32 of the context.
    assert result["details"]["most_tokens_cached_per_layer"] == measure.TINY_SLIDING_WINDOW - 1


def test_cases_without_their_packages_say_why_they_were_not_measured(tmp_path):
    out = tmp_path / "ACCURACY.md"
    rows, _ = measure.run(measure.parse_args(["--device", "cpu", "--tiny", "--cases", "qlora:*", "image:*",
                                              "--out", str(out)]))
    assert {row["status"] for row in rows} == {"not measured"}
    assert "bitsandbytes is not installed" in out.read_text()
    assert "diffusers is not installed" in out.read_text()


def test_dry_run_plans_every_gpu_case_from_configurations_matching_the_catalog(tmp_path):
    out = tmp_path / "ACCURACY.md"
    rows, document = measure.run(measure.parse_args(["--dry-run", "--out", str(out)]))
    planned = [row for row in rows if row["status"] == "planned"]
    assert {row["workload"] for row in planned} == {"inference", "finetune", "speech"}
    for row in planned:
        assert "matches the catalog's parameter count" in row["reason"], row["case"]
        assert "measured" not in row
    assert "has not been measured yet" in document
    assert measure.GPU_COMMAND in document
    assert out.read_text() == document
