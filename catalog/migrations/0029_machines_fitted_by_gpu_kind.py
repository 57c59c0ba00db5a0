"""MXFP4 experts are fitted by the kind of GPU (issue #43): vLLM pads them for the MoE kernel each GPU
runs, so a machine's need depends on its GPU type. The fleet shapes keep each machine's kind (the place of
that kernel, worked out from its GPU type's architecture and compute capability, `catalog.counting.gpu_kinds`)
and a GPU type whose kind changes counts every machine again. PostgreSQL only; the embedded SQLite run
counts by the engine."""

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
    dependencies = [("catalog", "0028_language_model_trust_remote_code")]

    operations = [
        migrations.RunPython(
            run("0029_machines_fitted_by_gpu_kind.sql"), run("0029_machines_fitted_by_gpu_kind.reverse.sql")
        )
    ]
