"""Prime Intellect's availability: the answer of `GET /api/v1/availability` (GPU type -> list of
offers) or of `GET /api/v1/availability/gpus` (`{"items": [...]}`). Each offer:

    {"cloudId": "...", "gpuType": "H100_80GB", "socket": "SXM5", "provider": "...", "dataCenter": "...",
     "country": "US", "gpuCount": 8, "gpuMemory": 80, "stockStatus": "Available",
     "security": "secure_cloud", "prices": {"onDemand": 19.12, "communityPrice": null,
     "isVariable": false, "currency": "USD"}, "isSpot": false, "prepaidTime": null}

One machine per offer (id "<provider>/<cloudId>/<dataCenter>/<gpuCount>", "/spot" added for a spot
offer). Units: `gpuMemory` is GB per GPU, GiB as GPU memory is sold; the price is USD per hour for the
whole offer (`communityPrice` where given, else `onDemand`, as Prime's own CLI picks it), so divided by
`gpuCount`. Stock words (Available, High, Medium, Low; Unavailable) say whether it is available. A spot
offer is an interruptible machine at that price.

A prepaid offer (`prepaidTime` given) is no machine of its own: its price, read as above, is the
reserved price per GPU-hour of the machine whose on-demand offer has the same id, and `prepaidTime`
its term. The console keeps a reserved price beside a machine's on-demand price, so a prepaid offer
without that on-demand offer in the same answer is refused, alone. A machine with several prepaid
offers keeps the cheapest per GPU-hour (the first of equals), as a result prices a machine at its
cheapest market; the others are refused, naming the one kept.

`prepaidTime`'s unit: Prime's public API reference (docs.primeintellect.ai, "Get Availability
Information" and "Provision GPU") shows the field only as null in its examples; no page found states
its unit. Decided: seconds. The one figure at hand (tests/refresh/offer_fixtures/, 2,592,000 on
an instance named "...30D") is 30 days in seconds; read as hours or days it would be a term of
centuries, beyond any the console keeps (3,660 days). A term is converted exactly: one that is not a
whole number of days is refused, never rounded.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal

from . import base, units
from .base import FeedError, GpuTypeIndex, MachineRecord, ParsedFeed, RecordRejected, RejectedRecord
from .offers import json_object, machine_record, mapping, names, read_records

FORMAT = "prime-availability"
CURRENCY = "USD"


class PrimeAvailability:
    format = FORMAT
    short_name = "prime"

    def parse(
        self, body: bytes, *, provider_slug: str, gpu_types: GpuTypeIndex,
        models: frozenset[str] = frozenset(), tier: str = "secure",
    ) -> ParsedFeed:
        document = json_object(body)
        if isinstance(document.get("items"), list):
            items = [(f"items[{index}]", offer) for index, offer in enumerate(document["items"])]
        else:
            items = []
            for gpu_type, offers in document.items():
                if not isinstance(offers, list):
                    raise FeedError(f'the answer\'s "{str(gpu_type)[:40]}" is not a list of offers')
                items += [(f"{str(gpu_type)[:40]}[{index}]", offer) for index, offer in enumerate(offers)]
        parsed = read_records(
            [(where, offer) for where, offer in items if not prepaid(offer)],
            lambda offer: [self.record(offer, gpu_types)], machine_id_of,
        )
        add_reserved_prices(parsed, [(where, offer) for where, offer in items if prepaid(offer)])
        # The refusals in the answer's order, prepaid offers among the others.
        place = {where: index for index, (where, _offer) in enumerate(items)}
        parsed.rejected.sort(key=lambda rejection: place[rejection.where])
        return parsed

    @staticmethod
    def record(offer, gpu_types: GpuTypeIndex) -> MachineRecord:
        offer = mapping(offer, "an offer")
        count = units.gpu_count(offer.get("gpuCount"), "gpuCount")
        memory = units.memory_mib(units.figure(offer, "gpuMemory"), "gpuMemory", "GiB")
        price = offer_price(offer, count)
        stock, in_stock = units.stock(offer.get("stockStatus"), "stockStatus")
        spot = base.flag(offer.get("isSpot") or False, "isSpot")
        gpu_type, socket = offer.get("gpuType"), offer.get("socket")
        return machine_record(
            machine_id=machine_id_of(offer),
            gpu_names=names(f"{gpu_type} {socket}" if isinstance(gpu_type, str) and isinstance(socket, str)
                            else None, gpu_type),
            gpu_types=gpu_types,
            gpu_count=count,
            memory_mib=memory,
            price_per_gpu_hour=price,
            available=in_stock,
            free_gpus=None,
            country=base.country(offer.get("country")),
            region=offer.get("dataCenter") or "",
            interruptible=spot,
            interruptible_price_per_gpu_hour=price if spot else None,
            stock=stock,
        )


def offer_price(offer: dict, count: int) -> Decimal:
    """The offer's price per GPU-hour: `communityPrice` where given, else `onDemand`, USD per hour of the
    whole offer."""
    prices = mapping(offer.get("prices"), "prices")
    currency = prices.get("currency")
    if currency is not None and currency != CURRENCY:
        raise RecordRejected(f"prices are in {str(currency)[:10]}; the console keeps {CURRENCY}")
    field = "communityPrice" if prices.get("communityPrice") is not None else "onDemand"
    return units.price_per_gpu_hour(
        units.optional_number(prices.get(field), f"prices.{field}"), count, f"prices.{field}"
    )


def prepaid(offer) -> bool:
    """Whether the offer is prepaid: `prepaidTime` given (null or absent: an hourly offer)."""
    return isinstance(offer, dict) and offer.get("prepaidTime") is not None


@dataclass(frozen=True)
class _Reserved:
    price: Decimal  # USD per GPU-hour
    term_days: int
    where: str
    label: str | None  # the prepaid offer's id in the sync history


def add_reserved_prices(parsed: ParsedFeed, offers: list[tuple[str, object]]) -> None:
    """Reads each prepaid offer of `offers` ((place, offer) pairs) into the reserved price and term of
    its machine among `parsed.records`, or refuses it alone with its reason."""
    machines = {record.provider_machine_id: index for index, record in enumerate(parsed.records)}
    refused = {rejection.machine_id for rejection in parsed.rejected}
    kept: dict[str, _Reserved] = {}
    for where, offer in offers:
        label = _usable_id(offer)
        try:
            reserved = _reserved(offer, where, label)
            machine = machine_key(offer)
            if machine not in machines:
                shown = machine[:base.MAX_ID_LENGTH]
                raise RecordRejected(
                    f"a prepaid offer whose on-demand offer ({shown}) was refused" if machine in refused else
                    f"a prepaid offer without an on-demand offer of the same machine ({shown}) in the "
                    "answer; the console keeps a reserved price beside a machine's on-demand price"
                )
            held = kept.get(machine)
            if held is not None:
                cheaper, other = (reserved, held) if reserved.price < held.price else (held, reserved)
                parsed.rejected.append(
                    RejectedRecord(other.label, _not_kept(cheaper, cheaper.price < other.price), other.where)
                )
                reserved = cheaper
            kept[machine] = reserved
        except RecordRejected as rejection:
            parsed.rejected.append(RejectedRecord(label, str(rejection), where))
    for machine, reserved in kept.items():
        index = machines[machine]
        parsed.records[index] = replace(
            parsed.records[index],
            reserved_price_per_gpu_hour=reserved.price, reserved_term_days=reserved.term_days,
        )
    parsed.merged += len(kept)


def _reserved(offer, where: str, label: str | None) -> _Reserved:
    offer = mapping(offer, "an offer")
    if base.flag(offer.get("isSpot") or False, "isSpot"):
        raise RecordRejected("a prepaid offer marked isSpot: a prepaid term is not taken back")
    count = units.gpu_count(offer.get("gpuCount"), "gpuCount")
    term_days = units.whole_days(offer["prepaidTime"], "prepaidTime")
    return _Reserved(offer_price(offer, count), term_days, where, label)


def _not_kept(kept: _Reserved, cheaper: bool) -> str:
    """Why a machine's other prepaid offer is refused, naming the one kept by its place in the answer
    (both have the machine's id)."""
    which = "a cheaper" if cheaper else "an as cheap and earlier"
    return (
        f"{which} prepaid offer of the same machine is kept ({kept.where}: {kept.price} USD per GPU-hour "
        f"for {kept.term_days} days); a machine has one reserved price"
    )


def _usable_id(offer) -> str | None:
    try:
        return base.machine_id(machine_id_of(offer) + PREPAID_SUFFIX)
    except (RecordRejected, AttributeError):
        return None


# A prepaid offer's id in the sync history: its machine's, marked so it names no machine of its own (a
# refused record's id keeps its machine as it was; this one must not keep the on-demand machine).
PREPAID_SUFFIX = "/prepaid"


def machine_key(offer) -> str:
    """The machine an offer is of: its provider, cloud id, data center and GPU count."""
    parts = [offer.get("provider"), offer.get("cloudId"), offer.get("dataCenter"), offer.get("gpuCount")]
    return "/".join(str(part).strip() for part in parts if part not in (None, ""))


def machine_id_of(offer) -> str:
    return machine_key(offer) + ("/spot" if offer.get("isSpot") is True else "")
