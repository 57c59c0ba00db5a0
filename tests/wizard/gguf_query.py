"""What the tests of the wizard's llama.cpp and Ollama inputs (flash_attention, kv_unified, gpu_layers)
share: a catalog model's spec as the page sizes it, a row's memory as its machine records it, the API's
answers and a query string's values."""
from typing import cast

from catalog import rows as catalog_rows
from catalog.models import LanguageModel, Machine
from sizing.specs import LanguageModelSpec
from sizing.units import MIB


def catalog_spec(slug: str) -> LanguageModelSpec:
    """The model as the catalog holds it, with its published GGUF files (the names a command uses)."""
    return catalog_rows.language_model_spec(cast(LanguageModel, catalog_rows.get_model(slug)))


def memory_bytes(machine: dict) -> int:
    """A row's memory per GPU as its machine records it."""
    return cast(int, Machine.objects.get(pk=machine["id"]).memory_per_gpu_mib) * MIB


def get_json(client, path: str, query: str, **headers) -> tuple[int, dict]:
    response = client.get(f"/api/v1/{path}?{query}", **headers)
    return response.status_code, response.json()


def asked(query: str) -> dict[str, str]:
    """A query string's values by name."""
    return dict(pair.split("=") for pair in query.split("&"))
