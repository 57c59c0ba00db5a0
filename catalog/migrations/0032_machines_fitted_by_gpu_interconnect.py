"""Each machine is fitted at what its GPU type's GPUs are connected by where the user names no interconnect
(issue #43): vLLM's split costs each GPU what its fabric does (`sizing.calculators.vllm_interconnect`), read
from the GPU type's name. The fleet shapes keep each machine's kind of GPU as both the MoE kernel's place
and the interconnect's (`catalog.counting.gpu_kinds`, column gpu_kind, in place of moe_kernel), and a GPU
type whose name moves it counts every machine again. PostgreSQL only; the embedded SQLite run counts by
the engine."""

from pathlib import Path

from django.db import migrations

# The SQL as it was when this migration was written, frozen beside it: never today's generators.
SQL = Path(__file__).resolve().parent / "sql"


def run(name):
    def operation(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute((SQL / name).read_text(), params=None)

    return operation


class Migration(migrations.Migration):
    dependencies = [("catalog", "0031_speed_class_walks")]

    operations = [
        migrations.RunPython(
            run("0032_machines_fitted_by_gpu_interconnect.sql"),
            run("0032_machines_fitted_by_gpu_interconnect.reverse.sql"),
        )
    ]
