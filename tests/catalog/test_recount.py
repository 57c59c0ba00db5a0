"""Every shipped parameter count is the recount of `sizing.architectures.count_parameters` from the
figures on its own row, and that recount lands within 0.5 % of the published figure it is checked
against (what that figure counts is named beside it)."""
import pytest

from catalog.data.language_models import LANGUAGE_MODELS
from catalog.data.modern_models import MODERN_MODELS, PUBLISHED_CHECKS
from catalog.models import LanguageModel
from catalog.rows import language_model_spec
from sizing.architectures import count_parameters

ROWS = {row["slug"]: row for row in LANGUAGE_MODELS}


def spec_of(row):
    return language_model_spec(LanguageModel(**{k: v for k, v in row.items()}))


@pytest.mark.parametrize("slug", sorted(ROWS))
def test_shipped_total_is_the_recount_from_the_rows_own_figures(slug):
    row = ROWS[slug]
    counted = count_parameters(spec_of(row))
    assert counted.total == row["parameters"]
    if (row.get("architecture") or {}).get("moe"):
        assert counted.active == row["active_parameters"] < counted.total
    else:
        assert row.get("active_parameters") is None


@pytest.mark.parametrize("slug", sorted(PUBLISHED_CHECKS))
def test_recount_is_within_half_a_percent_of_the_published_figure(slug):
    published, part, source = PUBLISHED_CHECKS[slug]
    counted = count_parameters(spec_of(ROWS[slug]))
    value = {
        "total": counted.total,
        "non_embedding": counted.non_embedding,
        "with_mtp": counted.total + counted.mtp,
    }[part]
    assert abs(value - published) <= 0.005 * published, (slug, value, source)


def test_every_new_model_is_checked_against_a_published_figure():
    assert {row["slug"] for row in MODERN_MODELS} == set(PUBLISHED_CHECKS)


def test_rows_whose_published_figure_counts_something_else_say_so():
    for slug, (_, part, _) in PUBLISHED_CHECKS.items():
        row = ROWS[slug]
        architecture = row.get("architecture") or {}
        if part == "with_mtp" or architecture.get("mtp_layers"):
            assert "multi-token-prediction" in row["notes"], slug
        if architecture.get("vision"):
            assert "vision encoder" in row["notes"], slug


def test_every_whisper_count_is_the_recount_from_its_config():
    from catalog.data.speech_models import SPEECH_MODELS
    from sizing.architectures import count_whisper_parameters

    for row in SPEECH_MODELS:
        assert count_whisper_parameters(
            row["encoder_layers"], row["decoder_layers"], row["d_model"], row["vocab_size"], row["mel_bins"],
            row["max_source_positions"], row["max_target_positions"],
        ) == row["parameters"], row["slug"]
