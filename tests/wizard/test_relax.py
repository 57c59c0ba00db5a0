"""An empty answer says what relaxing each constraint alone would open."""
import pytest

from .conftest import LLAMA_8B

pytestmark = pytest.mark.django_db


def empty_reason(client, query):
    body = client.get("/api/v1/recommendations?" + query).json()
    assert body["machines"] == []
    return body["empty_reason"]


def test_countries_name_what_lies_outside_them(client, small_fleet):
    reason = empty_reason(client, LLAMA_8B + "&countries=CH")
    assert "outside CH: 5 machines from $0.30/h in DE, NL, US, FR." in reason


def test_outside_the_countries_with_other_limits_says_those_limits_too(client, small_fleet):
    reason = empty_reason(client, LLAMA_8B + "&countries=CH&max_price=0.10")
    assert "outside CH: 5 machines from $0.30/h in DE, NL, US, FR (over your price, budget or tier limits as well)" in reason


def test_too_little_memory_in_the_chosen_countries_says_where(client, small_fleet):
    reason = empty_reason(client, "workload=inference&model=llama-3-1-8b&precision=16&context=131072&requests=2000"
                                  "&countries=FR")
    assert reason.startswith("No machine in FR has enough memory")


def test_context_and_requests_name_the_largest_that_fits(client, small_fleet):
    reason = empty_reason(client, "workload=inference&model=llama-3-1-8b&precision=16&context=131072&requests=2000")
    assert "a context of 2,048 tokens fits on 1 machine from $20.00/h" in reason
    assert "31 concurrent requests fit on 1 machine from $20.00/h" in reason


def test_fine_tuning_words_the_same_hints_as_its_form(client, small_fleet):
    reason = empty_reason(client, "workload=finetune&model=llama-3-1-8b&precision=16&context=8192&requests=512")
    assert "a sequence length of 64 tokens fits on 2 machines from $1.60/h" in reason
    assert "a batch size of 2 fits on 2 machines" in reason


def test_the_tier_price_and_budget_hints_stay(client, small_fleet):
    reason = empty_reason(client, LLAMA_8B + "&max_price=0.20")
    assert "raising it to $0.30/h adds 1 machine" in reason


def test_the_page_shows_the_hint_beside_the_empty_list(client, small_fleet):
    html = client.get("/?" + LLAMA_8B + "&countries=CH").content.decode()
    assert 'data-testid="empty-reason"' in html and "outside CH: 5 machines" in html
