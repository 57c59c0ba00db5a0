"""The plan's words and JSON round as every other shown figure does (`sizing.units`): halves up."""
from decimal import Decimal
from fractions import Fraction

from sizing.throughput_plan import PlanCandidate, cheapest_plan
from sizing.units import decimal_text, figure_number, figure_text


def test_a_tie_reads_the_same_in_the_plan_and_elsewhere():
    speed = Decimal("12.345")  # tokens/s measured on one GPU: a tie at the second decimal
    machine = PlanCandidate(
        machine_id=1, order_key=(Decimal("1.00"), "p", "m1", 1), price_per_gpu_hour=Decimal("1.00"),
        free_gpus=1, gpus_per_copy=1, measured_tokens_per_s=speed, measured_gpus=1,
    )
    plan = cheapest_plan([machine], Decimal(10), Decimal(100), 0)
    assert "= 12.35 tokens/s measured × 100 % = 12.35 tokens/s" in plan.steps[0]
    assert decimal_text(speed) == figure_text(speed) == figure_text(Fraction(speed)) == "12.35"
    assert figure_number(plan.usable_tokens_per_s) == figure_number(speed) == 12.35
