"""What the tests of the wizard's llama.cpp and Ollama inputs (flash_attention, kv_unified, gpu_layers)
share: a catalog model's spec as the page sizes it, a row's memory as its machine records it, the API's
answers and a query string's values."""
import math
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


def needs_sized_per_shape(monkeypatch, **settings) -> list[list]:
    """Llama 3.1 70B in Q4_K_M at 8,192 tokens × 3 under llama.cpp (b10240) with `settings`: the settings of
    each need its capacity sizes on three shapes (one 24 GB GPU, eight 80 GB ones, one 2 GB GPU), each list
    checked against the bound (two binary searches over the requests and the context, and the asked need)."""
    import sizing.capacity as capacity_module
    from sizing.calculators import estimate
    from sizing.calculators.llamacpp import llamacpp_need
    from sizing.calculators.llamacpp_builds import parse_build
    from sizing.capacity import Capacity
    from sizing.limits import MAX_CONTEXT, MAX_REQUESTS
    from tests.sizing.test_llamacpp import spec

    calls: list = []

    def counted(model, asked):
        calls.append(asked)
        return llamacpp_need(model, asked)

    monkeypatch.setattr(capacity_module, "llamacpp_need", counted)
    bound = 2 * (math.ceil(math.log2(MAX_REQUESTS)) + math.ceil(math.log2(MAX_CONTEXT))) + 5
    need = estimate("inference", spec("llama-3-1-70b"), 4, 8192, 3, None, 16, engine="llamacpp",
                    llamacpp_build=parse_build("b10240"), **settings)
    sized = []
    for memory_mib, gpus in ((24564, 1), (81559, 8), (2048, 1)):
        calls.clear()
        capacity_module._gguf_need.cache_clear()
        cast(Capacity, need.capacity)._on_machine(gpus, memory_mib * MIB, None)
        assert 0 < len(calls) <= bound, (memory_mib, gpus, len(calls))
        sized.append(list(calls))
    return sized
