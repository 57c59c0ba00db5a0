"""Recommending machines: order, preferences, alternatives, budget, words and the JSON shape."""

import json
import random
from datetime import timedelta
from decimal import Decimal

from sizing.countries import EU_MEMBERS, expand_countries
from sizing.matching import ALTERNATIVES_SHOWN, recommend
from sizing.offers import MeasuredSpeed, Preferences
from sizing.reasons import (
    BUDGET_UNDER_HOUR,
    MEMORY_UNKNOWN,
    NO_FREE_GPUS,
    OFFLINE,
    OTHER_TIER,
    OUTSIDE_COUNTRIES,
    OVER_PRICE,
    STALE,
    TOO_SMALL,
)
from sizing.wording import budget_cover
from tests.factories import (
    CARD_48GB_MIB,
    H200_MIB,
    NOW,
    RTX_4090_MIB,
    T4_MIB,
    fixed_need,
    llama_8b,
    llama_70b,
    offer,
)

ANYWHERE = Preferences()


def ids(machines):
    return [machine.offer.id for machine in machines]


def test_cheapest_hourly_price_first_with_a_stable_tie_break():
    offers = [
        offer(id=1, price_per_gpu_hour="2.00", provider="Beta"),
        offer(id=2, price_per_gpu_hour="1.00", provider="Beta", provider_machine_id="b"),
        offer(id=3, price_per_gpu_hour="1.00", provider="Alpha", provider_machine_id="z"),
        offer(id=4, price_per_gpu_hour="1.00", provider="Beta", provider_machine_id="a"),
        offer(id=5, price_per_gpu_hour="1.00", provider="Beta", provider_machine_id="a"),
        offer(id=6, price_per_gpu_hour="0.50", provider="Zeta"),
    ]
    result = recommend(fixed_need(10), offers, ANYWHERE)
    assert ids(result.machines) == [6, 3, 4, 5, 2, 1]


def test_hourly_price_counts_every_gpu_used_and_beats_price_per_gpu():
    # Llama 70B needs 4 of the 48 GB cards (4 × 1.20 = 4.80/h) but 2 H200s (2 × 2.50 = 5.00/h).
    offers = [
        offer(id=1, memory_per_gpu_mib=H200_MIB, price_per_gpu_hour="2.50"),
        offer(id=2, memory_per_gpu_mib=CARD_48GB_MIB, price_per_gpu_hour="1.20", gpu_type="RTX A6000"),
    ]
    result = recommend(llama_70b(), offers, ANYWHERE)
    assert ids(result.machines) == [2, 1]
    assert [m.hourly_price for m in result.machines] == [Decimal("4.80"), Decimal("5.00")]
    assert [m.fit.gpus_used for m in result.machines] == [4, 2]


def test_same_hourly_price_prefers_the_lower_price_per_gpu_hour():
    offers = [
        offer(id=1, memory_per_gpu_mib=CARD_48GB_MIB, price_per_gpu_hour="1.00"),  # 4 GPUs: 4.00/h
        offer(id=2, memory_per_gpu_mib=H200_MIB, price_per_gpu_hour="2.00"),  # 2 GPUs: 4.00/h
    ]
    assert ids(recommend(llama_70b(), offers, ANYWHERE).machines) == [1, 2]


def _mixed_fleet():
    fleet = []
    for index in range(40):
        fleet.append(
            offer(
                id=index + 1,
                provider=["Alpha", "Beta", "Gamma"][index % 3],
                tier=["secure", "community"][index % 2],
                memory_source=["datacenter", "host"][index % 2],
                memory_per_gpu_mib=[H200_MIB, CARD_48GB_MIB, RTX_4090_MIB, T4_MIB, None][index % 5],
                free_gpus=index % 9,
                gpu_count=8,
                price_per_gpu_hour=Decimal("0.50") + Decimal(index % 7) / 4,
                country=["DE", "FR", "US", None, "CH"][index % 5 - 1],
                booking_limit_hours=[None, 24][index % 2],
                interruptible=index % 3 == 0,
            )
        )
    return fleet


def test_the_same_inputs_give_the_identical_answer_whatever_the_input_order():
    fleet = _mixed_fleet()
    preferences = Preferences(
        budget=Decimal("100"),
        max_price_per_hour=Decimal("6"),
        tier="secure",
        countries=frozenset({"DE", "FR", "US"}),
        countries_input=("DE", "FR", "US"),
    )
    kwargs = {
        "lower_precision_breakdowns": {8: llama_70b(8), 4: llama_70b(4)},
        "excluded_before": {OFFLINE: 3, STALE: 1},
    }
    first = recommend(llama_70b(), fleet, preferences, **kwargs).to_dict()
    again = recommend(llama_70b(), fleet, preferences, **kwargs).to_dict()
    shuffled = list(fleet)
    random.Random(7).shuffle(shuffled)
    reordered = recommend(llama_70b(), shuffled, preferences, **kwargs).to_dict()

    assert first["machines"] or first["alternatives"]
    assert json.dumps(first) == json.dumps(again) == json.dumps(reordered)


def test_every_offer_is_counted_exactly_once():
    fleet = _mixed_fleet()
    preferences = Preferences(
        budget=Decimal("3"), max_price_per_hour=Decimal("5"), tier="secure", countries=frozenset({"DE", "FR"})
    )
    before = {OFFLINE: 5, STALE: 2, OUTSIDE_COUNTRIES: 4, MEMORY_UNKNOWN: 1}
    result = recommend(llama_70b(), fleet, preferences, excluded_before=before)

    assert sum(result.excluded.values()) + len(result.machines) == len(fleet) + sum(before.values())
    breaking = result.excluded[OTHER_TIER] + result.excluded[OVER_PRICE] + result.excluded[BUDGET_UNDER_HOUR]
    assert breaking == result.alternatives_total
    assert result.excluded[OFFLINE] >= 5 and result.excluded[STALE] == 2
    assert result.excluded[TOO_SMALL] > 0
    assert list(result.excluded) == [
        OFFLINE,
        STALE,
        OUTSIDE_COUNTRIES,
        MEMORY_UNKNOWN,
        NO_FREE_GPUS,
        TOO_SMALL,
        OTHER_TIER,
        OVER_PRICE,
        BUDGET_UNDER_HOUR,
    ]


def test_memory_unknown_and_location_unknown_machines_are_never_offered_not_even_as_alternatives():
    offers = [
        offer(id=1, memory_per_gpu_mib=None, tier="community", memory_source="unknown"),
        offer(id=2, country=None, tier="community"),
        offer(id=3, country="US", tier="community"),
        offer(id=4, country="DE", tier="community"),
    ]
    expanded, typed = expand_countries(["EU"])
    preferences = Preferences(tier="secure", countries=expanded, countries_input=typed)
    result = recommend(fixed_need(10), offers, preferences)

    assert result.machines == ()
    assert ids(result.alternatives) == [4]
    assert result.excluded[MEMORY_UNKNOWN] == 1
    assert result.excluded[OUTSIDE_COUNTRIES] == 2
    # With no countries chosen, an unknown location is still never offered.
    anywhere = recommend(fixed_need(10), offers, Preferences(tier="secure"))
    assert 2 not in ids(anywhere.alternatives) + ids(anywhere.machines)
    assert 1 not in ids(anywhere.alternatives) + ids(anywhere.machines)


def test_machines_not_heard_from_recently_or_without_free_gpus_are_left_out():
    offers = [
        offer(id=1, last_seen=NOW - timedelta(minutes=5)),
        offer(id=2, last_seen=NOW - timedelta(minutes=45)),
        offer(id=3, last_seen=None),
        offer(id=4, free_gpus=0, gpu_count=8),
    ]
    result = recommend(fixed_need(10), offers, ANYWHERE, now=NOW, stale_after_minutes=30)
    assert ids(result.machines) == [1]
    assert result.excluded[STALE] == 2
    assert result.excluded[NO_FREE_GPUS] == 1 and result.excluded[OFFLINE] == 0
    assert (
        "Availability",
        "Community machines online, Secure machines in stock, from active providers, heard from within 30 minutes",
    ) in result.constraints


def test_a_machine_over_the_price_limit_is_an_alternative_saying_so():
    offers = [offer(id=1, memory_per_gpu_mib=H200_MIB, price_per_gpu_hour="2.60")]
    result = recommend(llama_70b(), offers, Preferences(max_price_per_hour=Decimal("4")))
    assert result.machines == ()
    (alternative,) = result.alternatives
    assert alternative.breaks == ("max_price",)
    assert alternative.breaks_text == ("over your price limit: $5.20/h > $4.00/h",)
    assert (
        result.empty_reason == "No machine fits under your price limit; raising it to $5.20/h adds 1 machine."
    )


def test_another_tier_is_an_alternative_saying_so():
    offers = [offer(id=1, tier="community", memory_source="host"), offer(id=2, tier="community")]
    result = recommend(fixed_need(10), offers, Preferences(tier="secure"))
    assert result.machines == ()
    assert [a.breaks_text for a in result.alternatives] == [("Community tier; you chose Secure",)] * 2
    assert "choosing both tiers adds 2 machines" in result.empty_reason


def test_a_budget_covering_under_an_hour_is_an_alternative_saying_so():
    offers = [offer(id=1, price_per_gpu_hour="2.50")]
    result = recommend(fixed_need(10), offers, Preferences(budget=Decimal("2.00")))
    (alternative,) = result.alternatives
    assert alternative.breaks == ("budget",)
    assert alternative.breaks_text == ("budget covers under an hour: $2.00 at $2.50/h lasts 48 minutes",)
    assert alternative.budget_covers.text == "$2.00 covers 48 minutes at $2.50/h"
    assert "raising it to $2.50 (one hour on the cheapest) adds 1 machine" in result.empty_reason


def test_the_empty_reason_names_each_preference_to_relax_and_what_it_adds():
    offers = [
        offer(id=1, tier="community", price_per_gpu_hour="1.00"),
        offer(id=2, tier="community", price_per_gpu_hour="1.50"),
        offer(id=3, price_per_gpu_hour="6.00"),
        offer(id=4, price_per_gpu_hour="7.00"),
        offer(id=5, tier="community", price_per_gpu_hour="8.00"),
    ]
    preferences = Preferences(tier="secure", max_price_per_hour=Decimal("5"))
    result = recommend(fixed_need(10), offers, preferences, lower_precision_breakdowns={})
    assert result.machines == ()
    assert result.alternatives_total == 5
    assert result.empty_reason == (
        "No machine fits and meets every preference; raising the price limit to $6.00/h adds 1 machine; "
        "choosing both tiers adds 2 machines."
    )


def test_several_broken_preferences_are_all_named():
    offers = [offer(id=1, tier="community", price_per_gpu_hour="9")]
    preferences = Preferences(tier="secure", max_price_per_hour=Decimal("5"), budget=Decimal("1"))
    (alternative,) = recommend(fixed_need(10), offers, preferences).alternatives
    assert alternative.breaks == ("tier", "max_price", "budget")
    assert len(alternative.breaks_text) == 3


def test_alternatives_are_capped_but_counted():
    offers = [offer(id=i, tier="community", price_per_gpu_hour=Decimal(i)) for i in range(1, 31)]
    result = recommend(fixed_need(10), offers, Preferences(tier="secure"))
    assert len(result.alternatives) == ALTERNATIVES_SHOWN == 20
    assert result.alternatives_total == 30
    assert ids(result.alternatives) == list(range(1, 21))
    assert result.to_dict()["alternatives_total"] == 30


def test_budget_covers_hours_and_days():
    cover = budget_cover(Decimal("100"), Decimal("1.90"), None)
    assert cover.hours == Decimal("52.63")
    assert cover.days == Decimal("2.19")
    assert not cover.capped_by_booking_limit
    assert cover.text == "$100.00 covers 52.6 hours (2.2 days) at $1.90/h"


def test_budget_covers_notes_a_booking_limit_that_cuts_a_booking_shorter():
    cover = budget_cover(Decimal("100"), Decimal("1.90"), 24)
    assert cover.capped_by_booking_limit
    assert cover.booking_limit_hours == 24
    assert cover.text == (
        "$100.00 covers 52.6 hours (2.2 days) at $1.90/h; "
        "the booking limit of 24 h cuts a single booking shorter"
    )
    assert not budget_cover(Decimal("100"), Decimal("1.90"), 72).capped_by_booking_limit


def test_no_budget_means_no_budget_cover():
    result = recommend(fixed_need(10), [offer()], ANYWHERE)
    assert result.machines[0].budget_covers is None
    assert result.to_dict()["machines"][0]["budget_hours"] is None


def test_recommended_machine_budget_uses_the_gpus_used():
    result = recommend(
        llama_70b(),
        [offer(memory_per_gpu_mib=H200_MIB, price_per_gpu_hour="0.95")],
        Preferences(budget=Decimal("100")),
    )
    assert result.machines[0].budget_covers.text == "$100.00 covers 52.6 hours (2.2 days) at $1.90/h"


def test_why_it_fits_and_limits_in_words():
    community = offer(
        id=1,
        tier="community",
        memory_source="host",
        memory_per_gpu_mib=RTX_4090_MIB,
        free_gpus=2,
        interruptible=True,
        booking_limit_hours=12,
        memory_flag="reports 24 GiB; datasheet says 24 GB",
    )
    (machine,) = recommend(llama_8b(), [community], ANYWHERE).machines
    assert (
        machine.why_it_fits[0]
        == "23.99 GiB of memory per GPU (reported by the host, not checked by Node Lodge)"
    )
    assert machine.why_it_fits[1] == "uses 1 of 2 free GPUs: one GPU holds it"
    assert machine.why_it_fits[2].startswith("needs 19.55 GiB per GPU, leaving 4.44 GiB (18.5 %) headroom")
    assert machine.limits == (
        "GPU memory is what the host's machine reports; Node Lodge has not checked it",
        "reports 24 GiB; datasheet says 24 GB",
        "booking limit: a single booking ends after 12 h",
        "can be interrupted: save checkpoints",
        "runs on the host's own hardware; the host can read the session's memory",
    )
    assert machine.confidence == "low"


def test_a_tight_margin_is_a_limit_with_its_definition():
    (machine,) = recommend(fixed_need(23), [offer(memory_per_gpu_mib=RTX_4090_MIB)], ANYWHERE).machines
    assert machine.fit.tight
    tight = [limit for limit in machine.limits if limit.startswith("tight margin")]
    assert len(tight) == 1
    assert "a margin is tight when less than 10 % of the GPU's memory stays free" in tight[0]
    assert machine.confidence == "medium"


def test_secure_datacenter_machines_carry_no_limits():
    (machine,) = recommend(llama_8b(), [offer(memory_per_gpu_mib=H200_MIB)], ANYWHERE).machines
    assert machine.limits == ()
    assert machine.confidence == "high"
    assert machine.why_it_fits[0] == "140.40 GiB of memory per GPU (datacenter figure)"


def test_measured_speeds_shown_only_for_the_same_model_and_precision():
    speeds = (
        MeasuredSpeed("llama-3.1-8b", 16, 95.0, "tokens/s", NOW),
        MeasuredSpeed("llama-3.1-8b", 4, 150.0, "tokens/s", NOW),
        MeasuredSpeed("llama-3.1-70b", 16, 20.0, "tokens/s", NOW),
    )
    (machine,) = recommend(llama_8b(), [offer(measured_speeds=speeds)], ANYWHERE).machines
    assert [speed.value for speed in machine.measured_speed] == [95.0]
    assert (
        recommend(fixed_need(10), [offer(measured_speeds=speeds)], ANYWHERE).machines[0].measured_speed == ()
    )


def test_a_lower_precision_that_opens_more_machines_is_offered():
    offers = [
        offer(id=1, memory_per_gpu_mib=H200_MIB, price_per_gpu_hour="3.00"),
        offer(id=2, memory_per_gpu_mib=CARD_48GB_MIB, free_gpus=1, price_per_gpu_hour="1.00"),
        offer(id=3, memory_per_gpu_mib=RTX_4090_MIB, free_gpus=2, price_per_gpu_hour="0.40"),
    ]
    result = recommend(
        llama_70b(), offers, ANYWHERE, lower_precision_breakdowns={8: llama_70b(8), 4: llama_70b(4)}
    )
    assert ids(result.machines) == [1]
    by_precision = {alt.precision: alt for alt in result.precision_alternatives}
    # 8-bit: 81 GiB of weights + margin: still only the H200 (as 1 GPU), but cheaper.
    assert by_precision[8].machines_fitting == 1
    assert by_precision[8].more_machines == 0
    assert by_precision[8].cheapest_hourly_price == Decimal("3.00")
    assert by_precision[4].machines_fitting == 3
    assert by_precision[4].more_machines == 2
    assert by_precision[4].cheapest_offer_id == 3
    assert by_precision[4].cheapest_hourly_price == Decimal("0.80")
    assert round(by_precision[4].total_gib, 2) == round(llama_70b(4).total_gib, 2)


def test_a_lower_precision_that_opens_nothing_new_is_not_offered():
    offers = [offer(id=1, memory_per_gpu_mib=H200_MIB)]
    result = recommend(
        llama_8b(), offers, ANYWHERE, lower_precision_breakdowns={8: llama_8b(8), 4: llama_8b(4)}
    )
    assert result.precision_alternatives == ()


def test_lower_precision_options_respect_preferences_and_count_in_the_empty_reason():
    offers = [
        offer(id=1, memory_per_gpu_mib=RTX_4090_MIB, free_gpus=1, price_per_gpu_hour="0.40"),
        offer(
            id=2, memory_per_gpu_mib=RTX_4090_MIB, free_gpus=1, tier="community", price_per_gpu_hour="0.30"
        ),
    ]
    result = recommend(
        llama_70b(), offers, Preferences(tier="secure"), lower_precision_breakdowns={4: llama_70b(4)}
    )
    assert result.machines == ()
    assert result.precision_alternatives == ()  # 4-bit still needs ~40 GiB: too big for one 24 GB card
    small = [offer(id=3, memory_per_gpu_mib=CARD_48GB_MIB, free_gpus=1, price_per_gpu_hour="1.00"), *offers]
    result = recommend(
        llama_70b(), small, Preferences(tier="secure"), lower_precision_breakdowns={4: llama_70b(4)}
    )
    (four_bit,) = result.precision_alternatives
    assert four_bit.machines_fitting == 1
    assert result.empty_reason.startswith("No machine has enough memory: the largest holds 47.99 GiB per GPU")
    assert result.empty_reason.endswith("4-bit opens 1 machine from $1.00/h.")


def test_empty_answer_with_no_machines_in_the_countries():
    result = recommend(
        fixed_need(10),
        [offer(country="US")],
        Preferences(countries=frozenset({"DE"})),
        excluded_before={OUTSIDE_COUNTRIES: 4},
    )
    assert result.empty_reason.startswith(
        "No machine is available in the chosen countries right now; 5 available machines elsewhere"
    )


def test_constraints_applied_list_everything_in_words():
    expanded, typed = expand_countries(["EU", "CH"])
    preferences = Preferences(
        budget=Decimal("100"),
        max_price_per_hour=Decimal("4.5"),
        tier="both",
        countries=expanded,
        countries_input=typed,
    )
    result = recommend(
        llama_8b(),
        [offer(country="US"), offer(id=2, memory_per_gpu_mib=T4_MIB, free_gpus=1)],
        preferences,
        excluded_before={OFFLINE: 2, MEMORY_UNKNOWN: 1},
        stale_after_minutes=10,
    )
    constraints = dict(result.constraints)
    assert constraints["Workload"] == "Run a language model"
    assert constraints["Model"] == "llama-3.1-8b"
    assert constraints["Precision"] == "16-bit"
    assert constraints["Context per request"] == "4,096 tokens"
    assert constraints["Concurrent requests"] == "1"
    assert constraints["Budget"] == "$100.00"
    assert constraints["Maximum price per hour"] == "$4.50/h"
    assert constraints["Tier"] == "Secure and Community"
    assert constraints["Countries"].startswith("EU = 27 member states: " + ", ".join(sorted(EU_MEMBERS)))
    assert "CH (Switzerland)" in constraints["Countries"]
    assert constraints["Availability"].endswith("heard from within 10 minutes")
    assert constraints["Not recommended"] == (
        "2 offline or out of stock, 1 outside the chosen countries, 1 memory unknown, 1 too small"
    )
    assert [label for label, _ in result.constraints][:2] == ["Workload", "Model"]


def test_fine_tuning_and_speech_constraints_use_their_own_labels():
    finetune = fixed_need(10, workload="finetune", precision=4)
    finetune = type(finetune)(
        **{**finetune.__dict__, "inputs": {"model": "m", "context": 2048, "requests": 4}}
    )
    labels = dict(recommend(finetune, [], ANYWHERE).constraints)
    assert labels["Sequence length"] == "2,048 tokens"
    assert labels["Batch size"] == "4"
    speech = fixed_need(3, workload="speech", precision=16)
    speech = type(speech)(**{**speech.__dict__, "inputs": {"model": "whisper", "streams": 3}})
    labels = dict(recommend(speech, [], ANYWHERE).constraints)
    assert labels["Concurrent audio streams"] == "3"
    assert "30-second" in labels["Context"]
    notebook = dict(recommend(fixed_need(12), [], ANYWHERE).constraints)
    assert notebook["GPU memory needed"] == "12.00 GiB, as entered"
    assert "Model" not in notebook


def test_to_dict_is_json_ready_with_money_as_two_decimal_strings():
    machine = offer(id=7, price_per_gpu_hour="0.95", memory_per_gpu_mib=H200_MIB, booking_limit_hours=24)
    data = recommend(llama_70b(), [machine], Preferences(budget=Decimal("100"))).to_dict()
    json.dumps(data)  # raises on anything not JSON-ready
    assert set(data) >= {
        "memory",
        "machines",
        "alternatives",
        "precision_alternatives",
        "constraints",
        "excluded",
    }
    assert data["memory"]["total_bytes"] == llama_70b().total_bytes
    (row,) = data["machines"]
    assert row["id"] == 7
    assert row["price_per_gpu_hour"] == "0.95"
    assert row["price_per_hour"] == "1.90"
    assert row["gpus_used"] == 2
    assert row["memory_per_gpu_gib"] == 140.4
    assert row["budget_hours"] == 52.63
    assert row["budget_days"] == 2.19
    assert row["booking_limit_hours"] == 24
    assert row["last_seen"] == NOW.isoformat()
    assert row["confidence"] == "medium"
    for key in (
        "provider",
        "tier",
        "provider_machine_id",
        "gpu_type",
        "gpu_count",
        "memory_source",
        "country",
        "region",
        "interruptible",
        "confidence_reasons",
        "why_it_fits",
        "limits",
        "measured_speeds",
    ):
        assert key in row
    assert "breaks" not in row


def test_alternatives_in_to_dict_carry_their_breaks():
    data = recommend(fixed_need(10), [offer(tier="community")], Preferences(tier="secure")).to_dict()
    (row,) = data["alternatives"]
    assert row["breaks"] == ["tier"]
    assert row["breaks_text"] == ["Community tier; you chose Secure"]


def test_gib_and_money_follow_one_rounding_everywhere():
    """15.625 GiB is 15.63 GiB (halves up) in words and in JSON; $0.0985 stays $0.0985."""
    need = fixed_need(15.625)
    result = recommend(need, [offer(id=1, memory_per_gpu_mib=16 * 1024, price_per_gpu_hour="0.0985")], ANYWHERE)
    row = result.machines[0].to_dict()
    assert row["need_per_gpu_gib"] == 15.63
    assert "needs 15.63 GiB per GPU" in " ".join(row["why_it_fits"])
    assert row["price_per_hour"] == "0.0985"
