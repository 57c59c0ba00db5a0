"""Properties that must hold for any model and input, checked with generated cases."""
from hypothesis import given, settings
from hypothesis import strategies as st

from sizing.calculators import (
    estimate_finetune,
    estimate_inference,
    estimate_speech,
    prefill_activation_bytes,
)
from sizing.specs import LanguageModelSpec, SpeechModelSpec
from sizing.units import GIB

CASES = settings(max_examples=200, deadline=None, database=None)


@st.composite
def language_models(draw):
    heads = draw(st.sampled_from([1, 4, 8, 12, 16, 24, 28, 32, 40, 64, 96, 128]))
    kv_heads = draw(st.sampled_from([d for d in range(1, heads + 1) if heads % d == 0]))
    head_dim = draw(st.sampled_from([64, 80, 96, 128, 256]))
    hidden = draw(st.integers(64, 32_768))
    vocab = draw(st.integers(1_000, 300_000))
    tied = draw(st.booleans() | st.none())
    embeddings = vocab * hidden * (1 if tied else 2)
    # the parameter count holds the embeddings (and a separate head) plus the decoder blocks' layers
    return LanguageModelSpec(
        slug="generated",
        name="Generated model",
        parameters=embeddings + draw(st.integers(10_000, 10**12)),
        layers=draw(st.integers(1, 128)),
        attention_heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        hidden_size=hidden,
        intermediate_size=draw(st.integers(64, 131_072)),
        vocab_size=vocab,
        max_context=None,
        tied_embeddings=tied,
    )


speech_models = st.builds(
    SpeechModelSpec,
    slug=st.just("generated"),
    name=st.just("Generated speech model"),
    parameters=st.integers(1, 10**10),
    decoder_layers=st.integers(1, 64),
    d_model=st.integers(64, 4096),
    attention_heads=st.integers(1, 64),
    max_source_positions=st.integers(1, 3000),
    max_target_positions=st.integers(1, 1000),
)
precisions = st.sampled_from([16, 8, 4])
BASE_ITEMS = ("Base weights", "16-bit embeddings and output head", "Quantization scales")
token_counts = st.integers(1, 1_000_000)
request_counts = st.integers(1, 1000)
sequence_lengths = st.integers(1, 65_536)
batch_sizes = st.integers(1, 256)


def assert_consistent(breakdown):
    as_dict = breakdown.as_dict()
    assert breakdown.total_bytes == sum(item.bytes for item in breakdown.items)
    assert as_dict["total_bytes"] == sum(item["bytes"] for item in as_dict["items"])
    assert all(isinstance(item.bytes, int) and item.bytes > 0 for item in breakdown.items)


@CASES
@given(language_models(), precisions, token_counts, request_counts)
def test_inference_need_grows_strictly_with_context(model, precision, context, requests):
    shorter = estimate_inference(model, precision, context, requests)
    longer = estimate_inference(model, precision, context + 1, requests)
    assert longer.total_bytes > shorter.total_bytes
    assert_consistent(shorter)


@CASES
@given(language_models(), precisions, token_counts, request_counts)
def test_inference_need_grows_strictly_with_requests(model, precision, context, requests):
    fewer = estimate_inference(model, precision, context, requests)
    more = estimate_inference(model, precision, context, requests + 1)
    assert more.total_bytes > fewer.total_bytes


@CASES
@given(language_models(), token_counts, request_counts)
def test_inference_need_falls_with_lower_precision(model, context, requests):
    totals = [estimate_inference(model, p, context, requests).total_bytes for p in (16, 8, 4)]
    assert totals[0] >= totals[1] >= totals[2]
    if model.parameters >= 2:
        assert totals[0] > totals[1] > totals[2]


@CASES
@given(language_models(), precisions, token_counts, request_counts)
def test_bytes_per_gpu_falls_over_divisors_of_heads_and_keeps_the_runtime(
    model, precision, context, requests
):
    breakdown = estimate_inference(model, precision, context, requests)
    divisors = [n for n in range(1, model.attention_heads + 1) if model.attention_heads % n == 0]
    per_gpu = [breakdown.bytes_per_gpu(n) for n in divisors]

    assert per_gpu[0] == breakdown.total_bytes
    # a split adds its communication buffers once per GPU; from two GPUs on, more GPUs need less each
    split = per_gpu[1:]
    assert all(a >= b for a, b in zip(split, split[1:], strict=False))
    assert all(need > GIB for need in per_gpu)
    assert all(need > 3 * GIB for need in split)


@CASES
@given(language_models(), precisions, token_counts, request_counts)
def test_prefill_beyond_the_margin_is_the_excess_only(model, precision, context, requests):
    breakdown = estimate_inference(model, precision, context, requests)
    items = {item.name: item.bytes for item in breakdown.items}
    activations = prefill_activation_bytes(model, context * requests, requests)
    assert items.get("Prefill activations", 0) == max(0, activations - items["Safety margin"])


@CASES
@given(language_models(), precisions, sequence_lengths, batch_sizes)
def test_finetune_need_grows_strictly_with_sequence_length_and_batch_size(model, precision, length, batch):
    base = estimate_finetune(model, precision, length, batch)
    longer = estimate_finetune(model, precision, length + 1, batch).total_bytes
    larger = estimate_finetune(model, precision, length, batch + 1).total_bytes
    assert longer >= base.total_bytes and larger >= base.total_bytes
    # Only QLoRA's load-time quantizer can hold the need flat: the training items grow inside its peak.
    if all(item.name != "Quantizing the base at load" for item in base.items):
        assert longer > base.total_bytes and larger > base.total_bytes
    assert_consistent(base)


@CASES
@given(language_models(), sequence_lengths, batch_sizes)
def test_finetune_need_falls_with_lower_precision(model, length, batch):
    totals = [estimate_finetune(model, p, length, batch) for p in (16, 8, 4)]
    # The frozen base falls with precision; QLoRA's load-time quantizer is a separate, stated item.
    base = [sum(i.bytes for i in b.items if i.name in BASE_ITEMS) for b in totals]
    assert base[0] > base[1] > base[2]
    assert totals[0].total_bytes > totals[1].total_bytes


@CASES
@given(speech_models, precisions, st.integers(1, 1000))
def test_speech_need_grows_strictly_with_streams(model, precision, streams):
    fewer = estimate_speech(model, precision, streams)
    assert estimate_speech(model, precision, streams + 1).total_bytes > fewer.total_bytes
    assert_consistent(fewer)


@CASES
@given(speech_models, precisions, st.integers(1, 1000), st.integers(1, 16))
def test_speech_need_grows_strictly_with_beams(model, precision, streams, beams):
    fewer = estimate_speech(model, precision, streams, beams=beams)
    assert estimate_speech(model, precision, streams, beams=beams + 1).total_bytes > fewer.total_bytes
    assert_consistent(fewer)
