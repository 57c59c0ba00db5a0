"""Each GPU type's architecture and CUDA compute capability: what the rule of which engine runs which
weights and KV cache reads (`sizing.engine_support`), so that a start command is offered only for a GPU
that can run it. Shipped GPU types are filled in by name; any other stays empty (no command is offered for
it until staff name its architecture). Frozen here: migrations never import live code. Nothing in the
counting engine's SQL reads these columns."""
from django.db import migrations, models

ARCHITECTURES = {
    "H100 SXM 80GB": ("hopper", "9.0"),
    "H100 PCIe 80GB": ("hopper", "9.0"),
    "H100 NVL": ("hopper", "9.0"),
    "H200": ("hopper", "9.0"),
    "B200": ("blackwell", "10.0"),
    "RTX 5090": ("blackwell", "12.0"),
    "L40S": ("ada", "8.9"),
    "L40": ("ada", "8.9"),
    "L4": ("ada", "8.9"),
    "RTX 4090": ("ada", "8.9"),
    "RTX 6000 Ada": ("ada", "8.9"),
    "RTX A6000": ("ampere", "8.6"),
    "RTX A5000": ("ampere", "8.6"),
    "RTX A4000": ("ampere", "8.6"),
    "RTX 3090": ("ampere", "8.6"),
    "A10": ("ampere", "8.6"),
    "A100 40GB": ("ampere", "8.0"),
    "A100 80GB": ("ampere", "8.0"),
    "T4": ("turing", "7.5"),
    "V100 16GB": ("volta", "7.0"),
    "V100 32GB": ("volta", "7.0"),
    "MI300X": ("cdna3", ""),
}
CHOICES = [
    ("volta", "Volta (NVIDIA)"), ("turing", "Turing (NVIDIA)"), ("ampere", "Ampere (NVIDIA)"),
    ("ada", "Ada Lovelace (NVIDIA)"), ("hopper", "Hopper (NVIDIA)"), ("blackwell", "Blackwell (NVIDIA)"),
    ("cdna2", "CDNA2 (AMD)"), ("cdna3", "CDNA3 (AMD)"),
]


def fill_in(apps, schema_editor):
    GpuType = apps.get_model("catalog", "GpuType")
    for row in GpuType.objects.filter(name__in=list(ARCHITECTURES)):
        row.architecture, row.compute_capability = ARCHITECTURES[row.name]
        row.save(update_fields=["architecture", "compute_capability"])


class Migration(migrations.Migration):
    dependencies = [("catalog", "0019_cluster_index_reads_ids_and_prices")]

    operations = [
        migrations.AddField(
            model_name="gputype",
            name="architecture",
            field=models.CharField(
                blank=True, choices=CHOICES, max_length=20,
                help_text="The GPU's architecture: which engine runs which weights and KV cache on it "
                          "(sizing.engine_support). Empty = not recorded: no start command is offered for it.",
            ),
        ),
        migrations.AddField(
            model_name="gputype",
            name="compute_capability",
            field=models.CharField(
                blank=True, max_length=5, verbose_name="Compute capability",
                help_text='NVIDIA only: the CUDA compute capability as major.minor (e.g. "8.6"); empty on AMD.',
            ),
        ),
        migrations.RunPython(fill_in, migrations.RunPython.noop),
    ]
