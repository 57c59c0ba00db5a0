"""GET /api/v1/capacity's partial offload by build: which layers -ngl N keeps on the GPUs, the output head
among them from llama.cpp b7847 and in every llama-server Ollama starts (ggml-org/llama.cpp#18148), after
the layers before it and in Ollama's own runners (`sizing.calculators.llamacpp.offload_placement`)."""
import pytest

from .test_api_capacity import capacity

pytestmark = pytest.mark.django_db

TOO_BIG = "model=llama-3-1-70b&max_model_len=8192&gpu=RTX 4090"


@pytest.mark.parametrize(("engine", "version", "head_first"), [
    ("llamacpp", "b7000", False), ("llamacpp", "b9500", True),
    ("ollama", "0.29.0", False), ("ollama", "0.31.0", True),
])
def test_the_partial_offload_places_the_layers_as_the_build_does(client, small_fleet, engine, version,
                                                                   head_first):
    status, body = capacity(client, f"{TOO_BIG}&engine={engine}&engine_version={version}")
    assert status == 200, body
    assert body["fits"] is False
    partial = body["partial_offload"]
    ngl = partial["gpu_layers"]
    assert 0 < ngl == body["layers_that_fit"] < 80
    assert partial["output_head_on_gpus"] is head_first
    assert partial["layers_on_gpus"] == (ngl - 1 if head_first else ngl)
    if engine == "llamacpp":
        assert f"-ngl {ngl} " in partial["command"]
    else:
        assert partial["ollama"]["num_gpu"] == str(ngl)
    words = partial["words"]
    if head_first:
        assert words.startswith(f"-ngl {ngl}: {ngl - 1} of 80 layers and the output head fit on the GPUs")
    else:
        assert words.startswith(f"{ngl} of 80 layers fit on the GPUs")


def test_the_head_first_keeps_fewer_layers_where_the_head_weighs_more_than_a_layer(client, small_fleet):
    """Llama 3.1 70B's head (128,256 × 8,192) outweighs one of its layers: from b7847 the same GPU keeps the
    head and fewer layers; a build not given is sized so, the larger need."""
    _, old = capacity(client, f"{TOO_BIG}&engine=llamacpp&engine_version=b7000")
    _, new = capacity(client, f"{TOO_BIG}&engine=llamacpp&engine_version=b9500")
    _, unknown = capacity(client, f"{TOO_BIG}&engine=llamacpp")
    assert new["partial_offload"]["layers_on_gpus"] < old["partial_offload"]["layers_on_gpus"]
    assert unknown["partial_offload"]["layers_on_gpus"] == new["partial_offload"]["layers_on_gpus"]
    assert unknown["partial_offload"]["output_head_on_gpus"] is True


def test_the_words_are_german_too(client, small_fleet):
    _, body = capacity(client, f"{TOO_BIG}&engine=llamacpp&engine_version=b9500", HTTP_ACCEPT_LANGUAGE="de")
    ngl = body["partial_offload"]["gpu_layers"]
    assert body["partial_offload"]["words"].startswith(
        f"-ngl {ngl}: {ngl - 1} von 80 Schichten und der Ausgabekopf passen auf die GPUs")
