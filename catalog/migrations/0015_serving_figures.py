"""What serving a model under vLLM needs from the catalog: each language model's Hugging Face id (the
start command loads it) and each GPU type's usable memory as CUDA reports it to PyTorch, with its source.

Existing rows are filled in from what they already hold: a model's id from its configuration's address,
the H100 SXM's usable figure from vLLM's start-up logs. Frozen here: migrations never import live code.
Nothing in the counting engine's SQL reads these tables, so its installed functions stay as shipped."""
from django.core.validators import MinValueValidator
from django.db import migrations, models

HF_PREFIX = "https://huggingface.co/"
USABLE = {
    "H100 SXM 80GB": (
        81090,
        "79.19 GiB total as vLLM 0.19 logs it on an H100 80GB HBM3 (torch.cuda.mem_get_info; llm-d planner "
        "start-up logs, catalog/data/reference/vllm_startup_logs.csv), rounded down to the MiB",
    ),
}
NVIDIA_SMI_SOURCE = "not recorded: the nvidia-smi total stands in (reference/gpus.csv)"


def fill_in(apps, schema_editor):
    LanguageModel = apps.get_model("catalog", "LanguageModel")
    GpuType = apps.get_model("catalog", "GpuType")
    for row in LanguageModel.objects.all():
        url = row.config_url or ""
        if url.startswith(HF_PREFIX):
            parts = url[len(HF_PREFIX):].split("/")
            if len(parts) >= 2 and parts[0] and parts[1]:
                row.hf_id = "/".join(parts[:2])
                row.save(update_fields=["hf_id"])
    for row in GpuType.objects.all():
        mib, source = USABLE.get(row.name, (None, NVIDIA_SMI_SOURCE))
        row.usable_memory_mib = mib
        row.usable_memory_source = source
        row.save(update_fields=["usable_memory_mib", "usable_memory_source"])


class Migration(migrations.Migration):
    dependencies = [("catalog", "0014_provider_copies_kept_by_database")]

    operations = [
        migrations.AddField(
            model_name="languagemodel",
            name="hf_id",
            field=models.CharField(
                blank=True, max_length=200, verbose_name="Hugging Face id",
                help_text="The model's id on the Hugging Face Hub (e.g. meta-llama/Llama-3.1-8B), as `vllm serve` "
                          "loads it. Empty = no start command is shown.",
            ),
        ),
        migrations.AddField(
            model_name="gputype",
            name="usable_memory_mib",
            field=models.IntegerField(
                blank=True, null=True, verbose_name="Usable memory (MiB)",
                validators=[MinValueValidator(1, message="Usable memory (MiB) must be a positive number (at least 1).")],
                help_text="The total CUDA reports to PyTorch (torch.cuda.mem_get_info), which vLLM's "
                          "gpu_memory_utilization multiplies; below the nvidia-smi figure on some boards. "
                          "Empty = not recorded: the nvidia-smi figure stands in.",
            ),
        ),
        migrations.AddField(
            model_name="gputype",
            name="usable_memory_source",
            field=models.CharField(blank=True, max_length=300, help_text="Where the usable figure comes from."),
        ),
        migrations.RunPython(fill_in, migrations.RunPython.noop),
    ]
