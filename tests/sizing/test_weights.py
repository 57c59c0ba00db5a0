"""The table of weight formats: bits per parameter with scales, and what stays 16-bit."""
from fractions import Fraction

import pytest

from sizing.errors import SizingError
from sizing.weights import (
    EMBEDDINGS,
    FINETUNE_BASE_FORMAT,
    FORMATS,
    INFERENCE_FORMAT,
    OUTPUT_HEAD,
    split_parameters,
    stored_weights,
)


def test_bits_per_parameter_include_each_groups_scale_and_zero():
    assert FORMATS["gptq-int4"].bits_per_parameter() == Fraction(4) + Fraction(16 + 4, 128) == Fraction(133, 32)
    assert FORMATS["gptq-int8"].bits_per_parameter() == Fraction(8) + Fraction(16 + 8, 128)
    assert FORMATS["bnb-nf4"].bits_per_parameter() == Fraction(4127, 1000)  # QLoRA's 4.127 bits
    assert FORMATS["bnb-int8"].bits_per_parameter(row_length=4096) == Fraction(8) + Fraction(32, 4096)
    assert FORMATS["bf16"].bits_per_parameter() == 16
    with pytest.raises(ValueError):
        FORMATS["bnb-int8"].bits_per_parameter()


def test_quantized_formats_keep_embeddings_and_output_head_in_16_bit():
    for key, fmt in FORMATS.items():
        if fmt.quantized:
            assert set(fmt.keeps_16_bit) == {EMBEDDINGS, OUTPUT_HEAD}, key
    assert FORMATS["bf16"].keeps_16_bit == ()


def test_each_precision_choice_names_a_format_of_that_width():
    for table in (INFERENCE_FORMAT, FINETUNE_BASE_FORMAT):
        assert set(table) == {16, 8, 4}
        assert all(FORMATS[key].precision == precision for precision, key in table.items())


def test_a_tied_head_is_counted_once_and_an_unknown_tie_as_a_separate_head():
    tied = split_parameters("m", 1_000_000, 1000, 100, True)
    untied = split_parameters("m", 1_000_000, 1000, 100, False)
    unknown = split_parameters("m", 1_000_000, 1000, 100, None)
    assert (tied.embeddings, tied.output_head, tied.decoder) == (100_000, 0, 900_000)
    assert (untied.output_head, untied.decoder) == (100_000, 800_000)
    assert unknown.output_head == 100_000 and not unknown.tied_known and untied.tied_known


def test_a_parameter_count_too_small_for_its_embeddings_is_refused():
    with pytest.raises(SizingError) as error:
        split_parameters("Tiny", 150_000, 1000, 100, False)
    assert error.value.field == "model"
    assert "150,000 parameters cannot hold its embedding matrix" in error.value.message


def test_stored_weights_split_the_nominal_item_from_what_the_format_adds():
    """1,000,000 parameters, 100,000 of them embeddings (tied), GPTQ 4-bit:
    nominal 1,000,000 × 0.5 = 500,000; 16-bit part 100,000 × 1.5 = 150,000;
    scales 900,000 × 0.15625 / 8 = 17,578.125 → 17,579."""
    stored = stored_weights(FORMATS["gptq-int4"], split_parameters("m", 1_000_000, 1000, 100, True), 100)
    assert (stored.nominal_bytes, stored.sixteen_bit_extra_bytes, stored.scale_bytes) == (500_000, 150_000, 17_579)
    assert stored.total_bytes == 667_579
    sixteen = stored_weights(FORMATS["bf16"], split_parameters("m", 1_000_000, 1000, 100, True), 100)
    assert sixteen.total_bytes == sixteen.nominal_bytes == 2_000_000


def test_the_calculators_model_weights_item_is_the_formats_nominal_count():
    """The spec's "Model weights" item and the format table's nominal bytes are one number."""
    from sizing.calculators import estimate_finetune, estimate_inference

    from .models import LLAMA_3_1_8B

    split = split_parameters("Llama", 8_030_261_248, 128_256, 4096, False)
    for precision in (16, 8, 4):
        inference = {i.name: i.bytes for i in estimate_inference(LLAMA_3_1_8B, precision, 1024, 1).items}
        stored = stored_weights(FORMATS[INFERENCE_FORMAT[precision]], split, 4096)
        assert inference["Model weights"] == stored.nominal_bytes
        finetune = {i.name: i.bytes for i in estimate_finetune(LLAMA_3_1_8B, precision, 512, 1).items}
        base = stored_weights(FORMATS[FINETUNE_BASE_FORMAT[precision]], split, 4096,
                              nominal_includes_scales=precision == 4)
        assert finetune["Base weights"] == base.nominal_bytes
