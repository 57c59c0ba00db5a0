"""The throughput plan: the cheapest set of machines that serves a target number of tokens per second.

It joins the documentation's GPU-count formula (`sizing.calculators.gpus_for_throughput`) to
the fleet: usable per GPU = speed measured per GPU × efficiency; GPUs are added until their usable
speeds reach the target; redundancy comes on top. Only speeds measured on the machine itself count;
a machine without one is never in a plan (the caller counts those).

Replicas
    A model copy runs on the GPUs the fit needs on that machine (`sizing.fit`): one GPU when one
    holds it, otherwise several of the same machine by tensor parallelism. A machine with f free
    GPUs and g GPUs per copy offers ⌊f ÷ g⌋ copies, each delivering g × per-GPU speed × efficiency
    and costing g × its price per GPU-hour.

Redundancy
    R spare copies: the plan still serves the target when any R of its copies fail. With one GPU per
    copy and one speed this is the documentation's "productive + redundancy GPUs" (180,000 tokens/s
    at 75,000 per GPU and 75 % → 4 + 1 = 5). Every plan is therefore R spare copies, each at least as
    fast as any productive copy, plus productive copies whose usable speeds sum to the target.

Optimality
    The answer is the exact minimum of the total price per hour; among equally cheap plans the
    search's own order decides, so the same candidates in any order give the same plan. All
    arithmetic that decides a plan is in integers (prices in 1/10,000 of a dollar, speeds over a
    common denominator). The search: copies of equal speed form a class, taken cheapest first; the
    fractional cover (copies by price per speed) gives a first plan and, by Dembo and Hammer's
    reduction, fixes the copies no cheaper plan can leave out or take; then branch and bound over
    what is left, with the fractional-knapsack bound. Tests compare it with brute force.

Budget
    The branch and bound's work grows with the copies a target needs, so each search has a budget
    of steps (`sizing.limits.MAX_PLAN_SEARCH_STEPS`, counted by `search.SearchBudget`) past its first
    plan. A search that spends it keeps the cheapest plan found and marks it: `proven_cheapest` False
    and `price_floor_per_hour`, the price no plan can go below (the fractional cover's, rounded up),
    so the user reads how far from the cheapest it can be at most.

Modules: `plans` (candidates, parts, the plan, input checks), `search` (the cheapest plan), `steps`
(the formula in words). The measured speeds a plan reads are chosen by `sizing.speeds`.
"""
from .plans import (
    DEFAULT_EFFICIENCY_PERCENT,
    DEFAULT_REDUNDANCY,
    Plan,
    PlanCandidate,
    PlanPart,
    copy_price_units,
    copy_speed,
)
from .search import SearchBudget, cheapest_plan
from .steps import plan_steps

__all__ = [
    "DEFAULT_EFFICIENCY_PERCENT",
    "DEFAULT_REDUNDANCY",
    "Plan",
    "PlanCandidate",
    "PlanPart",
    "SearchBudget",
    "cheapest_plan",
    "copy_price_units",
    "copy_speed",
    "plan_steps",
]
