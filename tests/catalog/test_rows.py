
import pytest

from catalog import rows as catalog_rows
from catalog.models import LanguageModel, Machine
from sizing.offers import MachineOffer
from sizing.specs import ImagePipelineSpec, LanguageModelSpec, SpeechModelSpec

pytestmark = pytest.mark.django_db


def test_language_model_spec_carries_the_exact_published_figures(models_only):
    spec = catalog_rows.language_model_spec(LanguageModel.objects.get(slug="llama-3-1-8b"))
    assert spec == LanguageModelSpec(
        slug="llama-3-1-8b", name="Llama 3.1 8B", parameters=8_030_261_248, layers=32, attention_heads=32,
        kv_heads=8, head_dim=128, hidden_size=4096, intermediate_size=14336, vocab_size=128256,
        max_context=131072, tied_embeddings=False,
    )


def test_a_tied_output_head_reaches_the_spec(models_only):
    assert catalog_rows.get_model_spec("llama-3-2-1b").tied_embeddings is True


def test_unpublished_figures_reach_the_spec_as_none(models_only):
    spec = catalog_rows.get_model_spec("deepseek-v3")
    assert spec.kv_heads is None and spec.head_dim is None


def test_image_pipeline_spec_lists_components_in_order(models_only):
    spec = catalog_rows.get_model_spec("flux-1-dev")
    assert isinstance(spec, ImagePipelineSpec)
    assert [(c.role, c.parameters) for c in spec.components] == [
        ("denoiser", 11_901_408_320), ("text_encoder", 123_060_480),
        ("text_encoder", 4_762_310_656), ("autoencoder", 83_819_683),
    ]
    assert spec.native_resolution == "1024x1024"


def test_speech_model_spec_has_the_30_second_window(models_only):
    spec = catalog_rows.get_model_spec("whisper-large-v3")
    assert isinstance(spec, SpeechModelSpec)
    assert (spec.parameters, spec.decoder_layers, spec.d_model, spec.attention_heads) == (
        1_543_490_560, 32, 1280, 20,
    )
    assert (spec.max_source_positions, spec.max_target_positions) == (1500, 448)


def test_get_model_spec_returns_none_for_unknown_or_inactive_slugs(models_only):
    assert catalog_rows.get_model_spec("no-such-model") is None
    LanguageModel.objects.filter(slug="llama-2-7b").update(is_active=False)
    assert catalog_rows.get_model_spec("llama-2-7b") is None


def test_models_for_workload_suits_each_workload_in_a_stable_order(models_only):
    inference = catalog_rows.models_for_workload("inference")
    groups = [catalog_rows.model_group(row) for row in inference]
    assert groups == sorted(groups, key=catalog_rows.GROUP_ORDER.get)
    assert set(groups) == {"dense", "moe", "speech"}
    for group in ("dense", "moe"):
        rows = [row for row in inference if catalog_rows.model_group(row) == group]
        assert [row.parameters for row in rows] == sorted(row.parameters for row in rows)
    assert inference[0].slug == "qwen2-5-0-5b"
    assert {row.slug for row in inference if catalog_rows.model_group(row) == "moe"} >= {
        "mixtral-8x7b", "gpt-oss-120b", "deepseek-v3", "qwen3-30b-a3b", "llama-4-scout",
    }
    assert {row.kind for row in catalog_rows.models_for_workload("finetune")} == {"language"}
    images = catalog_rows.models_for_workload("image")
    assert [row.slug for row in images][0] == "stable-diffusion-v1-5"
    assert {row.kind for row in images} == {"image"}
    assert catalog_rows.models_for_workload("notebook") == []
    assert [r.slug for r in catalog_rows.models_for_workload("inference")] == [r.slug for r in inference]


def test_models_for_workload_rejects_an_unknown_workload(db):
    with pytest.raises(ValueError, match="Unknown workload"):
        catalog_rows.models_for_workload("mining")


def test_machine_offer_copies_the_machine_with_its_speeds(catalog):
    row = Machine.objects.select_related("provider", "gpu_type").get(provider_machine_id="hbr-0000")
    offer = catalog_rows.machine_offer(row)
    assert isinstance(offer, MachineOffer)
    assert offer.id == row.pk
    assert offer.provider == "Harbor Compute" and offer.tier == "secure"
    assert offer.gpu_type == row.gpu_type.name
    assert offer.datasheet_memory_mib == row.gpu_type.memory_mib
    assert offer.price_per_gpu_hour == row.price_per_gpu_hour
    assert {(s.model_slug, s.precision, s.unit) for s in offer.measured_speeds} == {
        ("llama-3-1-70b", 16, "tokens/s"), ("llama-3-1-8b", 16, "tokens/s"),
    }


def test_machine_offer_turns_an_unknown_country_into_none(catalog):
    row = Machine.objects.filter(country="").first()
    offer = catalog_rows.machine_offer(row)
    assert offer.country is None
    assert offer.memory_flag in (None, row.memory_flag)


def test_offers_read_as_columns_equal_offers_read_from_each_machine(catalog):
    """The answer reads machines as columns, Launch one machine as a row: the same offer either way."""
    machines = Machine.objects.order_by("pk")
    assert machines.count() > 100
    by_row = [catalog_rows.machine_offer(row) for row in machines.select_related("provider", "gpu_type")]
    assert catalog_rows.machine_offers(machines) == by_row
    assert any(offer.measured_speeds for offer in by_row)  # speeds are compared too


def test_machine_offers_use_a_fixed_number_of_queries(catalog, django_assert_max_num_queries):
    with django_assert_max_num_queries(3):
        offers = catalog_rows.machine_offers()
    assert len(offers) == Machine.objects.count()




def test_a_workloads_own_model_is_found_in_its_own_table_first(models_only, django_assert_num_queries):
    with django_assert_num_queries(2):  # the pipeline and its components, no other kind asked
        row = catalog_rows.get_model("flux-1-dev", kinds_first=("image",))
    assert row.kind == "image" and [c.name for c in row.components.all()]
    with django_assert_num_queries(4):  # without the workload: language, speech, then the pipeline
        assert catalog_rows.get_model("flux-1-dev") == row


def test_a_slug_two_kinds_share_names_the_workloads_own(models_only):
    pipeline = catalog_rows.get_model("flux-1-dev")
    language = LanguageModel.objects.filter(is_active=True).first()
    LanguageModel.objects.filter(pk=language.pk).update(slug=pipeline.slug)
    assert catalog_rows.get_model(pipeline.slug).kind == "language"  # every kind asked: language first
    assert catalog_rows.get_model(pipeline.slug, kinds_first=("image",)) == pipeline
    assert catalog_rows.get_model(pipeline.slug, kinds_first=("language", "speech")).kind == "language"


def test_every_catalog_row_is_found_as_the_orm_reads_it(models_only):
    """`get_model` asks a statement compiled once per model and database: each active row of every kind
    comes back equal, field for field, to the ORM's own reading of it (converters included), with an
    image pipeline's components; a row made inactive is found no more."""
    from django.forms.models import model_to_dict

    from catalog.models import ImagePipeline, LanguageModel, SpeechModel

    for model in (LanguageModel, SpeechModel, ImagePipeline):
        for expected in model.objects.filter(is_active=True):
            found = catalog_rows.get_model(expected.slug, kinds_first=(model.kind,))
            assert type(found) is model and model_to_dict(found) == model_to_dict(expected), expected.slug
            if model is ImagePipeline:
                assert list(found.components.all()) == list(expected.components.all())
    model.objects.filter(pk=expected.pk).update(is_active=False)
    assert catalog_rows.get_model(expected.slug, kinds_first=(model.kind,)) is None
