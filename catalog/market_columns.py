"""The column of `catalog_machine` holding a machine's price per GPU-hour under each market preference
(`sizing.markets.MARKET_CHOICES`): the listed price on demand only, and the columns the database computes
for the others (`catalog.models.market_price_expression`). Read by the model and by the counting SQL,
which loads before the models do."""
from __future__ import annotations

from sizing.markets import ANY_MARKET, INTERRUPTIBLE, ON_DEMAND

MARKET_PRICE_COLUMNS = {
    ON_DEMAND: "price_per_gpu_hour",
    INTERRUPTIBLE: "interruptible_allowed_price",
    ANY_MARKET: "any_market_price",
}
