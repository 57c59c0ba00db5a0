import json

import pytest
from django.core.management import call_command

from tests.helpers import LLAMA_8B_ARGS

pytestmark = pytest.mark.django_db


def test_estimate_prints_the_breakdown_table(models_and_gpus, capsys):
    call_command("estimate", "--model", "llama-3-1-8b", "--precision", "4", "--context", "4096", "--requests", "1")
    out = capsys.readouterr().out
    # the spec's 6.09 GiB plus the 16-bit embeddings and output head and the scales (ACCURACY.md)
    assert "Total" in out and "8.00 GiB" in out


def test_estimate_from_figures_on_the_command_line(db, capsys):
    call_command(
        "estimate", "--parameters", "8030261248", "--layers", "32", "--attention-heads", "32", "--kv-heads", "8",
        "--head-dim", "128", "--hidden-size", "4096", "--intermediate-size", "14336", "--vocab-size", "128256",
        "--precision", "16", "--context", "128000", "--requests", "1", "--json",
    )
    body = json.loads(capsys.readouterr().out)
    kv = next(item for item in body["items"] if item["name"] == "KV cache")
    assert kv["bytes"] == 2 * 32 * 8 * 128 * 2 * 128_000
    assert f"{kv['gib']:.3f}" == "15.625"


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--model", "llama-3-1-8b", "--precision", "16", "--context", "0", "--requests", "1"], "context"),
        (["--model", "nope", "--precision", "16", "--context", "10", "--requests", "1"], "model"),
        (["--workload", "notebook", "--memory-gib", "-1"], "memory_gib"),
        (["--parameters", "100", "--layers", "2", "--precision", "16", "--context", "10", "--requests", "1"],
         "model"),
    ],
)
def test_bad_input_goes_to_stderr_with_exit_status_2(models_and_gpus, capsys, args, field):
    with pytest.raises(SystemExit) as exit_info:
        call_command("estimate", *args)
    assert exit_info.value.code == 2
    assert f"error: {field}:" in capsys.readouterr().err


def test_recommend_prints_a_table_and_the_constraints(small_fleet, capsys):
    call_command("recommend", *LLAMA_8B_ARGS, "--budget", "40", "--countries", "EU")
    out = capsys.readouterr().out
    assert "Recommended machines:" in out and "Constraints applied:" in out
    assert "Harbor Compute" in out


FIGURES = ["--parameters", "8030261248", "--layers", "32", "--attention-heads", "32", "--kv-heads", "8",
           "--head-dim", "128", "--hidden-size", "4096", "--intermediate-size", "14336", "--vocab-size", "128256"]


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--engine", "llamacpp", "--flash-attention", "maybe"], "flash_attention"),
        (["--engine", "llamacpp", "--kv-unified", "yes"], "kv_unified"),
        (["--engine", "llamacpp", "--gpu-layers", "-3"], "gpu_layers"),
        (["--context", "abc"], "context"),
        (["--requests", "0"], "requests"),
    ],
)
def test_a_model_given_by_its_figures_reads_each_option_as_its_declared_field(db, capsys, args, field):
    """The figures' path reads the options as the page and the API read them: a value the field refuses is
    refused beside it (exit status 2), never read as a default."""
    with pytest.raises(SystemExit) as exit_info:
        call_command("estimate", *FIGURES, *args)
    assert exit_info.value.code == 2
    assert f"error: {field}:" in capsys.readouterr().err


def test_a_model_given_by_its_figures_is_sized_in_the_gguf_type_asked(db, capsys):
    call_command("estimate", *FIGURES, "--engine", "llamacpp", "--quantization", "Q8_0", "--json")
    q8 = json.loads(capsys.readouterr().out)
    call_command("estimate", *FIGURES, "--engine", "llamacpp", "--json")
    f16 = json.loads(capsys.readouterr().out)
    weights = [next(item["bytes"] for item in body["items"] if item["name"].startswith("Model weights"))
               for body in (q8, f16)]
    # Q8_0 keeps 34 bytes per 32 weights against F16's 64: a little over half
    assert 0.5 < weights[0] / weights[1] < 0.56
    assert "Q8_0" in q8["title"] and "F16" in f16["title"]
