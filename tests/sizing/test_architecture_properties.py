"""Properties over generated models of every layer kind: the cache grows with the context only through
the layers that keep every token, windows cap what the others hold, a fixed state stays fixed, and the
items always add up to the total."""
from hypothesis import given, settings
from hypothesis import strategies as st

from sizing.architectures import architecture_from_dict, count_parameters
from sizing.calculators import estimate_inference
from sizing.specs import LanguageModelSpec

CASES = settings(max_examples=150, deadline=None, database=None)
KINDS = ("full", "sliding", "chunked", "linear", "mla", "moe")


@st.composite
def modern_models(draw):
    kind = draw(st.sampled_from(KINDS))
    heads = draw(st.sampled_from([4, 8, 16, 32, 64]))
    kv_heads = draw(st.sampled_from([d for d in (1, 2, 4, 8) if heads % d == 0]))
    head_dim = draw(st.sampled_from([64, 128, 256]))
    hidden = draw(st.sampled_from([512, 1024, 2048, 4096]))
    layers = draw(st.integers(1, 64))
    architecture: dict = {"qk_norm": draw(st.booleans())}
    if kind == "sliding":
        architecture.update(layer_pattern=draw(st.sampled_from(["SF", "SSSSSF", "S", "FS"])),
                            sliding_window=draw(st.integers(1, 8192)))
    elif kind == "chunked":
        architecture.update(layer_pattern=draw(st.sampled_from(["CCCF", "C", "CF"])),
                            attention_chunk=draw(st.integers(1, 16384)))
    elif kind == "linear":
        architecture.update(
            layer_pattern=draw(st.sampled_from(["LLLF", "LF", "L"])),
            linear_attention={"key_heads": draw(st.integers(1, 32)), "value_heads": draw(st.integers(1, 64)),
                              "key_head_dim": draw(st.sampled_from([64, 128])),
                              "value_head_dim": draw(st.sampled_from([64, 128])),
                              "conv_kernel": draw(st.integers(1, 8))},
        )
    elif kind == "mla":
        architecture["mla"] = {"kv_lora_rank": draw(st.sampled_from([256, 512])),
                               "qk_rope_head_dim": draw(st.sampled_from([32, 64])),
                               "qk_nope_head_dim": 128, "v_head_dim": 128,
                               "q_lora_rank": draw(st.sampled_from([None, 1536]))}
        if architecture["mla"]["q_lora_rank"] is None:
            del architecture["mla"]["q_lora_rank"]
    if kind in ("moe", "mla") or draw(st.booleans()):
        experts = draw(st.integers(2, 256))
        architecture["moe"] = {
            "experts": experts, "experts_per_token": draw(st.integers(1, experts)),
            "expert_intermediate": draw(st.sampled_from([256, 768, 2048])),
            "shared_intermediate": draw(st.sampled_from([0, 512])),
            "first_dense_layers": draw(st.integers(0, layers - 1)),
            "layer_step": draw(st.integers(1, 2)),
        }
    native = draw(st.sampled_from([None, "fp8-block", "mxfp4"]))
    if native == "fp8-block":
        architecture["native_weights"] = {"format": native, "block": 128, "quantized": ["attention", "mlp"]}
    elif native == "mxfp4" and "moe" in architecture:
        architecture["native_weights"] = {"format": native, "block": 32, "quantized": ["experts"]}
    spec = LanguageModelSpec(
        slug="generated", name="Generated model", parameters=None, layers=layers, attention_heads=heads,
        kv_heads=None if kind == "mla" else kv_heads, head_dim=None if kind == "mla" else head_dim,
        hidden_size=hidden, intermediate_size=draw(st.sampled_from([1024, 4096, 11008])),
        vocab_size=draw(st.integers(1000, 200_000)), architecture=architecture_from_dict(architecture),
        tied_embeddings=draw(st.booleans()),
    )
    counted = count_parameters(spec)
    return LanguageModelSpec(**{**spec.__dict__, "parameters": counted.total})


def cache_items(breakdown):
    return {i.name: i.bytes for i in breakdown.items if "cache" in i.name.lower() or "state" in i.name.lower()}


def precision_for(spec):
    native = spec.architecture.native_weights
    return {"fp8-block": 8, "mxfp4": 4}.get(native.format, 16) if native else 16


@CASES
@given(model=modern_models(), short=st.integers(1, 100_000), extra=st.integers(1, 100_000),
       requests=st.integers(1, 64))
def test_the_cache_grows_with_context_only_through_the_layers_that_keep_every_token(model, short, extra,
                                                                                    requests):
    long = short + extra
    precision = precision_for(model)
    before = estimate_inference(model, precision, short, requests)
    after = estimate_inference(model, precision, long, requests)
    arch = model.architecture
    for name, bytes_before in cache_items(before).items():
        bytes_after = cache_items(after)[name]
        if "full-attention" in name or "latent" in name or name == "KV cache":
            assert bytes_after * short == bytes_before * long  # proportional to the tokens held
        elif "sliding" in name or "chunked" in name:
            window = arch.sliding_window if "sliding" in name else arch.attention_chunk
            assert bytes_before <= bytes_after
            assert bytes_after * min(short, window) == bytes_before * min(long, window)
        else:
            assert "linear-attention" in name
            assert bytes_after == bytes_before  # a fixed state per sequence
    weights = {i.name: i.bytes for i in before.items if i.name.startswith("Model weights") or "16-bit" in i.name}
    assert weights == {i.name: i.bytes for i in after.items if i.name.startswith("Model weights")
                       or "16-bit" in i.name}


@CASES
@given(model=modern_models(), context=st.integers(1, 200_000), requests=st.integers(1, 64),
       kv_bits=st.sampled_from([16, 8]))
def test_items_sum_to_the_total_and_caches_scale_with_requests(model, context, requests, kv_bits):
    precision = precision_for(model)
    breakdown = estimate_inference(model, precision, context, requests, kv_bits)
    assert all(item.bytes >= 0 for item in breakdown.items)
    assert sum(item.bytes for item in breakdown.items) == breakdown.total_bytes
    assert breakdown.as_dict()["total_bytes"] == sum(i["bytes"] for i in breakdown.as_dict()["items"])
    doubled = estimate_inference(model, precision, context, 2 * requests, kv_bits)
    assert {n: 2 * b for n, b in cache_items(breakdown).items()} == cache_items(doubled)
    if kv_bits == 8:
        sixteen = cache_items(estimate_inference(model, precision, context, requests, 16))
        for name, value in cache_items(breakdown).items():
            assert value * (1 if "linear-attention" in name else 2) == sixteen[name]


@CASES
@given(model=modern_models())
def test_the_recount_splits_into_its_groups_and_active_never_exceeds_total(model):
    counted = count_parameters(model)
    assert counted.total == sum(group.parameters for group in counted.groups) == model.parameters
    assert 0 < counted.active <= counted.total
    if model.architecture.moe is None:
        assert counted.active == counted.total
