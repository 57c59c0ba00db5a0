"""The engine in German and in English: the documentation's terms and German figures under
translation.override("de"), English as before otherwise, and values for machines the same in both.

Needs the compiled catalogue (bin/setup compiles sizing/locale/de/LC_MESSAGES/django.po).
"""
from decimal import ROUND_HALF_UP, Decimal

import pytest
from django.utils import translation
from hypothesis import given, settings
from hypothesis import strategies as st

from sizing import i18n
from sizing.calculators import estimate, estimate_inference, gpus_for_throughput
from sizing.confidence import CONFIDENCE_WORDS, LOW
from sizing.errors import SizingError
from sizing.matching import recommend
from sizing.offers import Preferences
from sizing.reasons import TOO_SMALL, reason_words
from sizing.results import machine_row
from sizing.units import fmt_gib, fmt_int, gib_display, gib_number, money_string, money_text
from sizing.wording import TIER_WORDS, budget_cover
from sizing.workloads import BY_CODE, WORKLOAD_WORDS
from tests.factories import H200_MIB, NOW, T4_MIB, fixed_need, llama_70b, offer

from .models import LLAMA_3_1_8B


def items_by_name(breakdown):
    return {item.name: item for item in breakdown.items}


@pytest.fixture
def pure_english():
    """The hook as it is without Django: its English defaults; Django's hook put back afterwards."""
    installed = dict(vars(i18n._hooks))
    i18n.uninstall()
    yield
    for name, function in installed.items():
        setattr(i18n._hooks, name, function)


def test_the_spec_example_reads_in_the_documentations_german_terms_and_figures():
    with translation.override("de"):
        breakdown = estimate_inference(LLAMA_3_1_8B, 16, 4096, 1)
        rows = [(item.name, fmt_gib(item.bytes)) for item in breakdown.items]
        total = fmt_gib(breakdown.total_bytes)
    assert rows == [
        ("Modellgewichte", "14,96 GiB"),
        ("KV-Cache", "0,50 GiB"),
        ("Sicherheitsmarge", "3,09 GiB"),
        ("CUDA-Laufzeit", "1,00 GiB"),
    ]
    assert total == "19,55 GiB"
    assert breakdown.title == "Llama 3.1 8B, Inferenz, 16-Bit, 4.096 Token × 1 Anfrage"


def test_the_formulas_are_filled_in_with_german_figures():
    with translation.override("de"):
        items = items_by_name(estimate_inference(LLAMA_3_1_8B, 16, 4096, 1))
    assert items["Modellgewichte"].formula == "8.030.261.248 Parameter × 2 Bytes (16-Bit)"
    assert items["KV-Cache"].formula == (
        "2 × 32 Schichten × 8 KV-Heads × 128 Head-Dimension × 2 Bytes × 4.096 Token × 1 Anfrage"
    )
    assert items["Sicherheitsmarge"].formula.startswith("20 % × 15,46 GiB (Modellgewichte + KV-Cache)")
    assert items["CUDA-Laufzeit"].formula == "1 GiB pro GPU (Treiberkontext, Kernel, Arbeitsspeicher der Bibliotheken)"


def test_the_assumptions_are_german():
    with translation.override("de"):
        assumptions = estimate_inference(LLAMA_3_1_8B, 16, 4096, 1).assumptions
    assert "Die Sicherheitsmarge von 20 % deckt Aktivierungen, temporäre Puffer und Speicherfragmentierung ab." in (
        assumptions
    )
    assert any("32 Attention-Heads" in words for words in assumptions)
    assert not any("safety margin" in words for words in assumptions)


def test_the_same_breakdown_is_english_when_english_is_active():
    with translation.override("en"):
        items = items_by_name(estimate_inference(LLAMA_3_1_8B, 16, 4096, 1))
    assert list(items) == ["Model weights", "KV cache", "Safety margin", "CUDA runtime"]
    assert items["Model weights"].formula == "8,030,261,248 parameters × 2 bytes (16-bit)"
    assert fmt_gib(sum(item.bytes for item in items.values())) == "19.55 GiB"


def test_without_django_the_hook_is_plain_english(pure_english):
    assert i18n.gettext("Model weights") == "Model weights"
    assert i18n.ngettext("%(count)s machine", "%(count)s machines", 2) % {"count": 2} == "2 machines"
    assert i18n.format_number(8_030_261_248) == "8,030,261,248"
    assert i18n.format_number(Decimal("1020.4")) == "1,020.4"
    assert i18n.language() == "en"
    # Even with German requested of Django, the pure hook does not translate.
    with translation.override("de"):
        breakdown = estimate_inference(LLAMA_3_1_8B, 16, 4096, 1)
        assert [item.name for item in breakdown.items] == [
            "Model weights", "KV cache", "Safety margin", "CUDA runtime"
        ]
        assert fmt_gib(breakdown.total_bytes) == "19.55 GiB"
        assert money_text(Decimal("0.098")) == "$0.098"


def test_figures_for_people_follow_the_language_and_values_for_machines_do_not():
    for language, shown in (("en", ("19.55", "8,030,261,248", "$0.098", "$1,020.40")),
                            ("de", ("19,55", "8.030.261.248", "0,098 $", "1.020,40 $"))):
        with translation.override(language):
            assert (
                gib_display(20_991_872_000),
                fmt_int(8_030_261_248),
                money_text(Decimal("0.098")),
                money_text(Decimal("1020.4")),
            ) == shown
            assert gib_number(20_991_872_000) == 19.55
            assert money_string(Decimal("0.098")) == "0.098"
            assert money_string(Decimal("1020.4")) == "1020.40"


def test_what_a_budget_covers_in_german():
    with translation.override("de"):
        long = budget_cover(Decimal("100"), Decimal("0.098"), None)
        capped = budget_cover(Decimal("100"), Decimal("0.098"), 48)
        short = budget_cover(Decimal("0.01"), Decimal("0.098"), None)
    assert long.text == "100,00 $ Budget reicht für 1.020,4 Stunden (42,5 Tage) bei 0,098 $/h"
    assert capped.text.endswith("; das Buchungslimit von 48 h beendet eine einzelne Buchung früher")
    assert short.text == "0,01 $ Budget reicht für 6 Minuten bei 0,098 $/h"
    # The values behind the words stay numbers.
    assert (long.hours, long.days) == (Decimal("1020.40"), Decimal("42.51"))


def test_a_german_empty_answer_says_what_is_missing_and_what_to_relax():
    offers = [offer(id=1, memory_per_gpu_mib=H200_MIB, price_per_gpu_hour="2.60")]
    with translation.override("de"):
        result = recommend(llama_70b(), offers, Preferences(max_price_per_hour=Decimal("4")), now=NOW)
        (alternative,) = result.alternatives
    assert result.empty_reason == (
        "Keine Maschine passt unter Ihren Höchstpreis; eine Anhebung auf 5,20 $/h bringt 1 Maschine dazu."
    )
    assert alternative.breaks == ("max_price",)
    assert alternative.breaks_text == ("über Ihrem Höchstpreis: 5,20 $/h > 4,00 $/h",)


def test_a_german_empty_answer_when_no_machine_is_large_enough():
    offers = [offer(id=1, memory_per_gpu_mib=T4_MIB, free_gpus=1)]
    with translation.override("de"):
        result = recommend(fixed_need(20), offers, Preferences(), now=NOW)
    assert result.empty_reason == (
        "Keine Maschine hat genug Speicher: Die größte fasst 15,00 GiB pro GPU, der Workload braucht "
        "20,00 GiB auf einer GPU."
    )
    # The reason codes are values: the same keys in every language; their words are German.
    assert result.excluded[TOO_SMALL] == 1
    with translation.override("de"):
        assert reason_words(TOO_SMALL) == "zu klein"
        assert dict(result.constraints)["Nicht empfohlen"] == "1 zu klein"


def test_a_german_answer_names_why_it_fits_its_limits_and_its_confidence():
    offers = [offer(id=1, tier="community", memory_source="host", booking_limit_hours=24, interruptible=True)]
    with translation.override("de"):
        result = recommend(llama_70b(), offers, Preferences(budget=Decimal("100")), now=NOW)
        (machine,) = result.machines
        row = machine_row(machine)
        confidence_words = CONFIDENCE_WORDS[machine.confidence]
        constraints = dict(result.constraints)
    assert machine.why_it_fits[0] == "140,40 GiB Speicher pro GPU (vom Anbieter gemeldet, nicht von Node Lodge geprüft)"
    assert machine.why_it_fits[1].startswith("nutzt 2 von 8 freien GPUs: per Tensor-Parallelität auf 2 GPUs verteilt")
    assert "Buchungslimit: eine einzelne Buchung endet nach 24 h" in machine.limits
    assert "unterbrechbar: Checkpoints speichern" in machine.limits
    assert machine.confidence == LOW and confidence_words == "niedrig"
    assert "Speicherwert vom Anbieter gemeldet, nicht von Node Lodge geprüft" in machine.confidence_reasons
    # JSON keys and values stay language-neutral; only the words are German.
    assert row["tier"] == "community" and row["memory_source"] == "host" and row["confidence"] == "low"
    assert row["price_per_hour"] == "6.00" and row["memory_per_gpu_gib"] == 140.4
    assert row["memory_source_short"] == "vom Anbieter gemeldet"
    assert row["budget_text"] == "100,00 $ Budget reicht für 16,7 Stunden bei 6,00 $/h"
    assert row["budget_hours"] == 16.66
    assert constraints["Workload"] == "Ein Sprachmodell ausführen"
    assert constraints["Kontext pro Anfrage"] == "4.096 Token"
    assert constraints["Budget"] == "100,00 $"
    assert constraints["Höchstpreis pro Stunde"] == "keiner"
    assert constraints["Stufe"] == "Secure und Community"
    assert constraints["Verfügbarkeit"].endswith("mit Meldung in den letzten 15 Minuten")


def test_labels_fixed_at_import_are_read_in_the_active_language():
    with translation.override("de"):
        assert str(BY_CODE["inference"].label) == "Ein Modell ausführen"
        assert f"{BY_CODE['image'].label}" == "Bilder generieren"
        assert WORKLOAD_WORDS["finetune"] == "Ein Sprachmodell fine-tunen (LoRA / QLoRA)"
        assert TIER_WORDS["both"] == "Secure und Community"
    with translation.override("en"):
        assert str(BY_CODE["inference"].label) == "Run a model"
        assert WORKLOAD_WORDS["finetune"] == "Fine-tune a language model (LoRA / QLoRA)"


def test_errors_are_raised_in_the_active_language_on_the_same_field():
    with translation.override("de"), pytest.raises(SizingError) as german:
        estimate("inference", LLAMA_3_1_8B, 16, 200_000, 1, None)
    with translation.override("en"), pytest.raises(SizingError) as english:
        estimate("inference", LLAMA_3_1_8B, 16, 200_000, 1, None)
    assert german.value.field == english.value.field == "context"
    assert german.value.message == (
        "Llama 3.1 8B verarbeitet höchstens 131.072 Token; der Kontext von 200.000 liegt darüber."
    )
    assert english.value.message == (
        "Llama 3.1 8B handles at most 131,072 tokens; the context of 200,000 is above that limit."
    )


def test_the_documentations_gpu_count_example_in_german():
    with translation.override("de"):
        plan = gpus_for_throughput(180_000, 75_000, 75, 1)
    assert plan.steps == (
        "Nutzbar pro GPU = 75.000 Token/s × 75 % = 56.250 Token/s",
        "Produktive GPUs = Aufrunden(180.000 ÷ 56.250) = 4",
        "Gesamt-GPUs = 4 produktiv + 1 Redundanz = 5",
    )


def test_country_names_follow_the_language():
    from sizing.countries import country_name

    with translation.override("de"):
        assert [country_name(code) for code in ("DE", "CH", "EU")] == ["Deutschland", "Schweiz", "Europäische Union"]
    with translation.override("en"):
        assert [country_name(code) for code in ("DE", "CH", "EU")] == ["Germany", "Switzerland", "European Union"]


def test_the_availability_window_counts_minutes_with_german_figures():
    with translation.override("de"):
        result = recommend(fixed_need(10), [offer(id=1)], Preferences(), now=NOW, stale_after_minutes=1440)
    assert dict(result.constraints)["Verfügbarkeit"].endswith("mit Meldung in den letzten 1.440 Minuten")


@given(
    value=st.one_of(
        st.integers(min_value=-10**15, max_value=10**15),
        st.decimals(min_value=-10**12, max_value=10**12, allow_nan=False, allow_infinity=False, places=6),
    ),
    places=st.sampled_from([None, 0, 1, 2, 4]),
    grouping=st.booleans(),
    language=st.sampled_from(["en", "de"]),
)
@settings(max_examples=300, deadline=None)
def test_figures_read_as_djangos_own_number_formatting_writes_them(value, places, grouping, language):
    """The hook swaps the language's separators into the English figure; Django's general formatter
    is the reference it must equal."""
    from django.utils import numberformat
    from django.utils.formats import get_format

    prepared = value
    if places is not None:
        prepared = Decimal(value).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    with translation.override(language):
        expected = numberformat.format(
            prepared, get_format("DECIMAL_SEPARATOR"), decimal_pos=places,
            grouping=get_format("NUMBER_GROUPING") if grouping else 0,
            thousand_sep=get_format("THOUSAND_SEPARATOR"), force_grouping=grouping, use_l10n=True,
        )
        assert i18n.format_number(value, places, grouping) == expected


def test_words_unread_are_english_whatever_the_language_and_the_same_bytes():
    """An estimate made for its bytes alone (`words_unread`: an empty answer's halvings) needs the
    same memory item by item as in German, in English words and figures; afterwards German again."""
    with translation.override("de"):
        german = estimate_inference(LLAMA_3_1_8B, precision=16, context=4096, requests=2)
        with i18n.words_unread():
            unread = estimate_inference(LLAMA_3_1_8B, precision=16, context=4096, requests=2)
            assert i18n.format_number(8030261248) == "8,030,261,248"
        again = estimate_inference(LLAMA_3_1_8B, precision=16, context=4096, requests=2)
        assert i18n.format_number(8030261248) == "8.030.261.248"
    assert [item.bytes for item in unread.items] == [item.bytes for item in german.items]
    assert unread.total_bytes == german.total_bytes
    assert [item.formula for item in again.items] == [item.formula for item in german.items]
    assert any("8,030,261,248" in item.formula for item in unread.items)
    assert not any("8,030,261,248" in item.formula for item in german.items)


def test_words_remembered_ask_each_message_once_and_read_the_same():
    """Inside `words_remembered` (an answer and its rows) the host translates each message, plural and
    context once and names its language once; the words are those it gives outside, German stays
    German, and `words_unread` inside still writes English."""
    asked: list[object] = []

    def counting(function, name):
        def wrapped(*args):
            asked.append((name, *args))
            return function(*args)
        return wrapped

    with translation.override("de"):
        outside = estimate_inference(LLAMA_3_1_8B, precision=16, context=4096, requests=2)
        i18n.install(
            gettext=counting(translation.gettext, "gettext"),
            ngettext=counting(translation.ngettext, "ngettext"),
            pgettext=counting(translation.pgettext, "pgettext"),
            language=counting(translation.get_language, "language"),
        )
        try:
            with i18n.words_remembered():
                first = estimate_inference(LLAMA_3_1_8B, precision=16, context=4096, requests=2)
                asked_once = len(asked)
                second = estimate_inference(LLAMA_3_1_8B, precision=16, context=4096, requests=2)
                figures = [i18n.format_number(1234.5), i18n.format_number(1234.5)]
                with i18n.words_remembered():  # nested: the outer memory
                    third = estimate_inference(LLAMA_3_1_8B, precision=16, context=4096, requests=2)
                with i18n.words_unread():
                    english = estimate_inference(LLAMA_3_1_8B, precision=16, context=4096, requests=2)
            plain_after = estimate_inference(LLAMA_3_1_8B, precision=16, context=4096, requests=2)
        finally:
            i18n.install(gettext=translation.gettext, ngettext=translation.ngettext,
                         pgettext=translation.pgettext, language=translation.get_language)
    assert asked_once > 0
    assert len(asked) > asked_once * 2  # after the memory: asked again, every time
    remembered = asked[:asked_once]
    assert len(remembered) == len(set(remembered))  # each message once
    assert sum(1 for call in remembered if call[0] == "language") <= 1
    words = [(item.name, item.formula) for item in outside.items]
    for worded in (first, second, third, plain_after):
        assert [(item.name, item.formula) for item in worded.items] == words
    assert figures == ["1.234,5", "1.234,5"]
    assert any("8,030,261,248" in item.formula for item in english.items)
    assert not any("8,030,261,248" in item.formula for item in first.items)


def test_figures_remembered_keep_their_own_digits_and_are_formatted_once():
    """Inside `words_remembered` each distinct figure (its type, digits, places and grouping) is asked of
    the host once; 2.5 and 2.50 stay apart, and `words_unread` inside still writes English."""
    host = i18n._hooks.format_number  # noqa: SLF001 - the installed hook, wrapped to count
    asked: list[tuple] = []

    def counting(value, places=None, grouping=True):
        asked.append((value, places, grouping))
        return host(value, places, grouping)

    figures = [Decimal("2.5"), Decimal("2.50"), 2, Decimal("2"), 1234.5, Decimal("8030261248")]
    with translation.override("de"):
        outside = [i18n.format_number(figure) for figure in figures]
        i18n.install(format_number=counting)
        try:
            with i18n.words_remembered():
                first = [i18n.format_number(figure) for figure in figures]
                again = [i18n.format_number(figure) for figure in figures]
                rounded = [i18n.format_number(Decimal("2.345"), places=2), i18n.format_number(Decimal("2.345"), places=2)]
                ungrouped = i18n.format_number(8030261248, grouping=False)
                with i18n.words_unread():
                    english = i18n.format_number(Decimal("1234.5"))
        finally:
            i18n.install(format_number=host)
    assert first == again == outside == ["2,5", "2,50", "2", "2", "1.234,5", "8.030.261.248"]
    assert rounded == ["2,35", "2,35"] and ungrouped == "8030261248" and english == "1,234.5"
    assert len(asked) == len(figures) + 2  # each figure once, the rounded one once, the ungrouped one once
