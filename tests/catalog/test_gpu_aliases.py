"""The GPU alias table: shipped aliases loaded once and never over staff's edits, names compared by
their key, and the admin where staff edit them."""
import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from catalog.data.gpu_aliases import GPU_ALIASES
from catalog.models import GpuAlias, GpuType
from catalog.services import load_catalog, load_gpu_aliases


@pytest.mark.django_db
def test_the_shipped_aliases_load_once_and_keep_staffs_edits():
    load_catalog(fleet=False)
    assert GpuAlias.objects.count() == len(GPU_ALIASES)
    edited = GpuAlias.objects.get(name="H100_80GB SXM5")
    edited.notes = "Prime Intellect, checked by staff"
    edited.save()
    GpuAlias.objects.filter(name="Tesla T4").delete()

    load_gpu_aliases()

    assert GpuAlias.objects.count() == len(GPU_ALIASES)
    assert GpuAlias.objects.get(name="H100_80GB SXM5").notes == "Prime Intellect, checked by staff"
    assert GpuAlias.objects.get(name="Tesla T4").gpu_type.name == "T4"  # a shipped one deleted comes back


@pytest.mark.django_db
def test_an_alias_is_kept_with_its_key_and_refuses_a_second_spelling_of_itself():
    t4 = GpuType.objects.create(name="T4", slug="t4", vendor="NVIDIA", memory_mib=15_360)
    alias = GpuAlias.objects.create(name="  Tesla T4 ", gpu_type=t4)
    assert (alias.name, alias.key) == ("Tesla T4", "teslat4")

    with pytest.raises(ValidationError, match="already names T4"):
        GpuAlias(name="tesla_t4", gpu_type=t4).full_clean()
    with pytest.raises(ValidationError, match="Name must contain letters or digits"):
        GpuAlias(name=" - _ ", gpu_type=t4).full_clean()


@pytest.mark.django_db
def test_staff_edit_aliases_in_the_admin(admin_client):
    load_catalog(fleet=False)
    a100 = GpuType.objects.get(name="A100 80GB")

    listing = admin_client.get(reverse("admin:catalog_gpualias_changelist"), {"q": "sxm4"})
    add = reverse("admin:catalog_gpualias_add")
    same = admin_client.post(add, {"name": "A100 SXM4 80 GB", "gpu_type": a100.pk, "notes": "Vast.ai"})
    added = admin_client.post(add, {"name": "A100 80GB HBM2e", "gpu_type": a100.pk, "notes": "Vast.ai"})
    gpu_type_page = admin_client.get(reverse("admin:catalog_gputype_change", args=[a100.pk]))

    assert listing.status_code == 200 and "NVIDIA A100-SXM4-80GB" in listing.content.decode()
    assert same.status_code == 200  # "A100-SXM4-80GB" is shipped: the error stands beside the name
    assert same.context["adminform"].form.errors["name"] == [
        "“A100 SXM4 80 GB” already names A100 80GB (case, spaces, hyphens and underscores are ignored)."
    ]
    assert added.status_code == 302
    assert GpuAlias.objects.get(name="A100 80GB HBM2e").key == "a10080gbhbm2e"
    assert "NVIDIA A100 80GB PCIe" in gpu_type_page.content.decode()


@pytest.mark.django_db
def test_the_admin_offers_each_feed_format_for_a_provider(admin_client):
    page = admin_client.get(reverse("admin:catalog_provider_add")).content.decode()

    for value in ("nodelodge-v1", "vast-offers", "runpod-gpu-types", "lambda-instance-types", "skypilot-catalog",
                  "gpuhunt-offers", "prime-availability"):
        assert f'value="{value}"' in page


def test_no_shipped_alias_is_listed_twice_for_one_type():
    from catalog.gpu_names import gpu_name_key

    keys = [(gpu_name_key(name), gpu_type) for name, gpu_type, _ in GPU_ALIASES]
    assert len(keys) == len(set(keys))
