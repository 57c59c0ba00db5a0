import json

import pytest
from django.urls import reverse

from catalog.models import (
    GpuType,
    ImagePipeline,
    LanguageModel,
    Machine,
    MeasuredSpeed,
    Provider,
    SpeechModel,
)

from .configs import LLAMA_LIKE_CONFIG

pytestmark = pytest.mark.django_db

ALL_MODELS = [LanguageModel, ImagePipeline, SpeechModel, GpuType, Provider, Machine, MeasuredSpeed]


def admin_url(model, view, *args):
    return reverse(f"admin:catalog_{model._meta.model_name}_{view}", args=args)


@pytest.mark.parametrize("model", ALL_MODELS, ids=lambda m: m.__name__)
def test_changelist_change_and_add_pages_render_for_staff(admin_client, catalog, model):
    assert admin_client.get(admin_url(model, "changelist")).status_code == 200
    first = model.objects.order_by("pk").first()
    assert admin_client.get(admin_url(model, "change", first.pk)).status_code == 200
    assert admin_client.get(admin_url(model, "add")).status_code == 200


def test_machine_changelist_filters_and_searches(admin_client, catalog):
    response = admin_client.get(admin_url(Machine, "changelist"), {"tier__exact": "community", "q": "RTX"})
    assert response.status_code == 200
    shown = response.context["cl"].result_count
    assert shown == Machine.objects.filter(tier="community", gpu_type__name__icontains="RTX").count() > 0


@pytest.mark.parametrize("model", ALL_MODELS, ids=lambda m: m.__name__)
def test_anonymous_visitors_are_sent_to_the_login_page(client, model):
    response = client.get(admin_url(model, "changelist"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def test_non_staff_users_cannot_reach_the_admin(client, django_user_model):
    user = django_user_model.objects.create_user("customer", password="a-long-password-1")
    client.force_login(user)
    response = client.get(admin_url(Machine, "changelist"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def machine_form(**overrides):
    provider = Provider.objects.get(name="Harbor Compute")
    gpu_type = GpuType.objects.get(name="L40S")
    data = {
        "provider": provider.pk, "provider_machine_id": "admin-1", "gpu_type": gpu_type.pk, "gpu_count": "4",
        "free_gpus": "4", "memory_per_gpu_mib": "46068", "memory_source": "datacenter", "memory_flag": "",
        "country": "de", "region": "Frankfurt", "site": "", "interconnect": "none", "interconnect_gbps": "",
        "price_per_gpu_hour": "0.8900", "booking_limit_hours": "",
        "is_available": "on", "last_seen_at_0": "", "last_seen_at_1": "", "gone_at_0": "", "gone_at_1": "",
        "measured_speeds-TOTAL_FORMS": "0", "measured_speeds-INITIAL_FORMS": "0",
        "measured_speeds-MIN_NUM_FORMS": "0", "measured_speeds-MAX_NUM_FORMS": "1000",
    }
    data.update(overrides)
    return data


def test_machine_add_form_saves_its_site_and_interconnect_trimmed(admin_client, catalog):
    response = admin_client.post(
        admin_url(Machine, "add"),
        machine_form(site="  fra-2  ", interconnect="infiniband", interconnect_gbps="400"),
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    machine = Machine.objects.get(provider_machine_id="admin-1")
    assert (machine.site, machine.interconnect, machine.interconnect_gbps) == ("fra-2", "infiniband", 400)
    page = admin_client.get(admin_url(Machine, "change", machine.pk)).content.decode()
    assert 'name="site" value="fra-2"' in page and 'name="interconnect_gbps" value="400"' in page


def test_machine_changelist_filters_on_interconnect_and_searches_sites(admin_client, catalog):
    harbor = Provider.objects.get(name="Harbor Compute")
    Machine.objects.filter(provider=harbor, provider_machine_id__in=["hbr-0000", "hbr-0001"]).update(
        site="zz-site-9", interconnect="roce", interconnect_gbps=200
    )
    changelist = admin_url(Machine, "changelist")
    found = admin_client.get(changelist, {"q": "zz-site-9"}).context["cl"].result_count
    assert found == 2
    on_roce = admin_client.get(changelist, {"interconnect__exact": "roce"}).context["cl"].result_count
    assert on_roce == Machine.objects.filter(interconnect="roce").count() >= 2
    assert "zz-site-9" in admin_client.get(changelist, {"q": "zz-site-9"}).content.decode()


def test_machine_add_form_saves_good_input(admin_client, catalog):
    response = admin_client.post(admin_url(Machine, "add"), machine_form())
    assert response.status_code == 302, response.context["adminform"].form.errors
    machine = Machine.objects.get(provider_machine_id="admin-1")
    assert (machine.country, machine.tier) == ("DE", "secure")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"memory_per_gpu_mib": "-5"}, "Memory per GPU must be a positive number of MiB."),
        ({"free_gpus": "6"}, "Free GPUs (6) cannot exceed the machine&#x27;s GPU count (4)."),
        ({"country": "QQ"}, "Country must be an ISO 3166 alpha-2 code such as DE or US"),
        ({"price_per_gpu_hour": "0"}, "Price per GPU-hour must be above zero."),
        ({"interconnect": "none", "interconnect_gbps": "400"},
         "Interconnect speed must be empty while the interconnect is “none”"),
        ({"interconnect": "infiniband", "interconnect_gbps": ""},
         "Interconnect speed is needed for InfiniBand: give it in Gb/s per machine."),
        ({"interconnect": "roce", "interconnect_gbps": "0"}, "Interconnect speed must be a positive number of Gb/s."),
        ({"interconnect": "roce", "interconnect_gbps": "fast"}, "Enter a whole number."),
        ({"interconnect": "token-ring", "interconnect_gbps": "4"}, "Select a valid choice."),
        ({"site": "x" * 121}, "Ensure this value has at most 120 characters"),
    ],
)
def test_machine_add_form_rejects_bad_input_with_its_message(admin_client, catalog, overrides, message):
    before = Machine.objects.count()
    response = admin_client.post(admin_url(Machine, "add"), machine_form(**overrides))
    assert response.status_code == 200
    assert message in response.content.decode()
    assert Machine.objects.count() == before




def import_url():
    return reverse("admin:catalog_languagemodel_import_config")


def test_the_changelist_links_to_the_config_import(admin_client, db):
    response = admin_client.get(admin_url(LanguageModel, "changelist"))
    assert import_url() in response.content.decode()
    assert admin_client.get(import_url()).status_code == 200


def test_pasting_a_config_creates_a_model_with_its_figures(admin_client, db):
    response = admin_client.post(
        import_url(),
        {
            "name": "Pasted 8B", "slug": "pasted-8b", "config_json": json.dumps(LLAMA_LIKE_CONFIG),
            "license": "x",
        },
    )
    model = LanguageModel.objects.get(slug="pasted-8b")
    assert response.status_code == 302
    assert response["Location"] == admin_url(LanguageModel, "change", model.pk)
    assert (model.layers, model.attention_heads, model.kv_heads, model.head_dim) == (32, 32, 8, 128)
    assert (model.hidden_size, model.intermediate_size, model.vocab_size, model.max_context) == (
        4096, 14336, 128256, 131072,
    )
    # A dense llama-like configuration gets its exact count computed.
    assert model.parameters == 8_030_261_248


def test_pasting_a_config_updates_an_existing_model_and_keeps_its_parameters(admin_client, models_only):
    config = {**LLAMA_LIKE_CONFIG, "max_position_embeddings": 65536}
    response = admin_client.post(
        import_url(), {"name": "Llama 3.1 8B", "slug": "llama-3-1-8b", "config_json": json.dumps(config)}
    )
    assert response.status_code == 302
    model = LanguageModel.objects.get(slug="llama-3-1-8b")
    assert model.max_context == 65536
    assert model.parameters == 8_030_261_248
    assert LanguageModel.objects.filter(slug="llama-3-1-8b").count() == 1


def test_pasting_gpt_oss_stores_its_layers_experts_and_mxfp4_weights(admin_client, db):
    from .configs import GPT_OSS_120B

    response = admin_client.post(
        import_url(), {"name": "gpt-oss-120b", "slug": "pasted-oss", "config_json": json.dumps(GPT_OSS_120B)}
    )
    assert response.status_code == 302
    model = LanguageModel.objects.get(slug="pasted-oss")
    assert (model.parameters, model.active_parameters) == (116_829_156_672, 5_711_982_912)
    assert model.architecture["layer_pattern"] == "SF" and model.architecture["sliding_window"] == 128
    assert model.architecture["native_weights"]["format"] == "mxfp4"
    assert model.family == "moe" and model.missing_values() == []


def test_admin_form_refuses_an_architecture_it_cannot_read(admin_client, models_only):
    model = LanguageModel.objects.get(slug="llama-3-1-8b")
    form = {field.name: getattr(model, field.name) for field in LanguageModel._meta.fields
            if field.name not in ("id",) and getattr(model, field.name) is not None}
    form["architecture"] = json.dumps({"layer_pattern": "FX"})
    response = admin_client.post(admin_url(LanguageModel, "change", model.pk), form)
    assert response.status_code == 200
    assert "architecture.layer_pattern" in response.content.decode()
    model.refresh_from_db()
    assert model.architecture == {}


def test_pasted_config_without_kv_heads_or_head_dim_uses_the_library_defaults(admin_client, db):
    config = {k: v for k, v in LLAMA_LIKE_CONFIG.items() if k != "num_key_value_heads"}
    admin_client.post(import_url(), {"name": "MHA", "slug": "mha", "config_json": json.dumps(config)})
    model = LanguageModel.objects.get(slug="mha")
    assert (model.kv_heads, model.head_dim) == (32, 128)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"num_hidden_layers": 32,', "Not valid JSON"),
        ("[1, 2]", "A config.json holds one JSON object"),
        (
            '{"model_type": "llama", "num_attention_heads": 8, "hidden_size": 512}',
            "The configuration has no “num_hidden_layers”",
        ),
        (
            '{"model_type": "llama", "num_hidden_layers": 0, "num_attention_heads": 8, "hidden_size": 512}',
            "must be a positive whole",
        ),
        ('{"num_hidden_layers": 2, "num_attention_heads": 8, "hidden_size": 512}', "no “model_type”"),
        ('{"model_type": "rwkv", "num_hidden_layers": 2}', "“model_type” &#x27;rwkv&#x27; is not an architecture"),
    ],
)
def test_broken_config_is_rejected_and_nothing_is_saved(admin_client, db, text, message):
    response = admin_client.post(import_url(), {"name": "Broken", "slug": "broken", "config_json": text})
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not LanguageModel.objects.filter(slug="broken").exists()


def test_deactivating_a_provider_in_the_admin_takes_its_machines_out_at_once(admin_client, catalog):
    provider = Provider.objects.filter(machines__isnull=False).distinct().first()
    data = {
        "name": provider.name, "slug": provider.slug, "tier": provider.tier, "feed_url": provider.feed_url,
        "feed_format": provider.feed_format, "notes": provider.notes,  # is_active left unticked
    }
    response = admin_client.post(admin_url(Provider, "change", provider.pk), data)
    assert response.status_code == 302
    assert not Provider.objects.get(pk=provider.pk).is_active
    assert provider.machines.count() == provider.machines.filter(provider_is_active=False).count() > 0


def test_staff_enter_a_measured_speed_with_how_it_was_measured(admin_client, catalog):
    machine = Machine.objects.get(provider_machine_id="kmo-0001")
    response = admin_client.post(admin_url(MeasuredSpeed, "add"), {
        "machine": machine.pk, "model_kind": "language", "model_slug": "llama-3-1-8b", "precision": "16",
        "value": "2450.5", "unit": "tokens/s", "gpus": "1", "engine": "vLLM", "engine_version": "0.6.3",
        "concurrency": "64", "input_tokens": "1024", "output_tokens": "128",
        "measured_at_0": "2025-05-01", "measured_at_1": "10:00:00", "measured_by": "Ops team",
    })
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else ""
    speed = MeasuredSpeed.objects.get(machine=machine, model_slug="llama-3-1-8b", measured_by="Ops team")
    assert (speed.source, speed.gpu_type_id, speed.concurrency, speed.engine) == (
        "staff", machine.gpu_type_id, 64, "vLLM"
    )
    too_many = admin_client.post(admin_url(MeasuredSpeed, "add"), {
        "machine": machine.pk, "model_kind": "language", "model_slug": "llama-3-1-8b", "precision": "16",
        "value": "2450", "unit": "tokens/s", "gpus": str(machine.gpu_count + 1),
        "measured_at_0": "2025-05-01", "measured_at_1": "10:00:00",
    })
    assert too_many.status_code == 200
    assert "cannot exceed the machine's GPU count" in " ".join(too_many.context["adminform"].form.errors["gpus"])


def test_the_config_import_speaks_the_staff_members_language(admin_client, db):
    german = {"HTTP_ACCEPT_LANGUAGE": "de"}
    page = admin_client.get(import_url(), **german).content.decode()
    assert "Sprachmodell aus config.json anlegen oder aktualisieren" in page
    assert "Fügen Sie die veröffentlichte" in page and 'value="Sichern"' in page
    response = admin_client.post(
        import_url(),
        {"name": "Pasted 8B", "slug": "pasted-8b", "config_json": json.dumps(LLAMA_LIKE_CONFIG), "license": "x"},
        follow=True, **german,
    )
    assert "Pasted 8B aus seiner config.json angelegt." in response.content.decode()
    english = admin_client.get(import_url(), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Create or update a language model from config.json" in english
