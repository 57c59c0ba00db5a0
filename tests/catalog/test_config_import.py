"""The config.json import as a service: what the admin page calls, usable without a request."""
import json

import pytest
from django.core.exceptions import ValidationError

from catalog.hf_config import ConfigError
from catalog.models import LanguageModel
from catalog.services import import_language_model

from .configs import KIMI_LINEAR, LLAMA_LIKE_CONFIG

pytestmark = pytest.mark.django_db


def test_a_new_slug_creates_the_model_with_the_stated_figures_and_the_computed_count():
    row, created = import_language_model(
        name="Pasted 8B", slug="pasted-8b", config_text=json.dumps(LLAMA_LIKE_CONFIG), license="x",
        config_url="https://example.org/config.json",
    )
    assert created is True
    stored = LanguageModel.objects.get(pk=row.pk)
    assert (stored.layers, stored.attention_heads, stored.kv_heads, stored.head_dim) == (32, 32, 8, 128)
    assert stored.parameters == 8_030_261_248
    assert (stored.license, stored.config_url) == ("x", "https://example.org/config.json")


def test_an_existing_slug_is_updated_and_keeps_what_the_import_does_not_state():
    first, _ = import_language_model(
        name="Custom", slug="custom", config_text=json.dumps(LLAMA_LIKE_CONFIG), parameters=123_456,
        license="apache-2.0", parameters_published="123K",
    )
    config = {**LLAMA_LIKE_CONFIG, "max_position_embeddings": 65536}
    row, created = import_language_model(name="Custom v2", slug="custom", config_text=json.dumps(config))
    assert created is False
    assert row.pk == first.pk
    stored = LanguageModel.objects.get(slug="custom")
    assert (stored.name, stored.max_context) == ("Custom v2", 65536)
    # Without a stated count the configuration's recount replaces it; empty texts keep theirs.
    assert (stored.parameters, stored.license, stored.parameters_published) == (
        8_030_261_248, "apache-2.0", "123K",
    )


def test_an_architecture_it_does_not_know_is_refused_and_the_stored_row_stays():
    import_language_model(name="Known", slug="known", config_text=json.dumps(LLAMA_LIKE_CONFIG))
    config = {**LLAMA_LIKE_CONFIG, "model_type": "custom", "max_position_embeddings": 65536}
    with pytest.raises(ConfigError, match="“model_type” 'custom' is not an architecture"):
        import_language_model(name="Known v2", slug="known", config_text=json.dumps(config))
    stored = LanguageModel.objects.get(slug="known")
    assert (stored.name, stored.max_context) == ("Known", 131072)


def test_a_stated_parameter_count_wins_over_the_computed_one():
    row, _ = import_language_model(
        name="Stated", slug="stated", config_text=json.dumps(LLAMA_LIKE_CONFIG), parameters=8_000_000_000,
    )
    assert LanguageModel.objects.get(pk=row.pk).parameters == 8_000_000_000


def test_an_unreadable_config_raises_its_reason_and_saves_nothing():
    with pytest.raises(ConfigError, match="no “num_hidden_layers”"):
        import_language_model(name="Broken", slug="broken",
                              config_text='{"model_type": "llama", "hidden_size": 512}')
    assert not LanguageModel.objects.filter(slug="broken").exists()


def test_figures_the_model_refuses_raise_a_validation_error_and_save_nothing():
    with pytest.raises(ValidationError) as raised:
        import_language_model(name="x" * 121, slug="too-long", config_text=json.dumps(LLAMA_LIKE_CONFIG))
    assert "name" in raised.value.message_dict
    assert not LanguageModel.objects.filter(slug="too-long").exists()


def test_an_architecture_that_loads_through_its_repositorys_code_ticks_trust_remote_code():
    row, _ = import_language_model(name="Kimi-Linear", slug="kimi-pasted", config_text=json.dumps(KIMI_LINEAR))
    assert LanguageModel.objects.get(pk=row.pk).trust_remote_code is True
    plain, _ = import_language_model(name="Plain", slug="plain", config_text=json.dumps(LLAMA_LIKE_CONFIG))
    assert LanguageModel.objects.get(pk=plain.pk).trust_remote_code is False


def test_a_config_never_unticks_trust_remote_code_that_staff_set():
    row, _ = import_language_model(name="Own code", slug="own-code", config_text=json.dumps(LLAMA_LIKE_CONFIG))
    LanguageModel.objects.filter(pk=row.pk).update(trust_remote_code=True)
    import_language_model(name="Own code v2", slug="own-code", config_text=json.dumps(LLAMA_LIKE_CONFIG))
    assert LanguageModel.objects.get(pk=row.pk).trust_remote_code is True
