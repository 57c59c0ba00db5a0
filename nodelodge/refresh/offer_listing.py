"""What a document of offers holds, as `import_offers --dry-run` shows it: each machine it would apply,
with its markets, reliability and stock as the refresh stores them, and each record it would refuse
with the reason.

Decimals are written as text so they stay exact ("2.4900", "23.98828125"); a figure the feed does not
give is null, never a guess.
"""
from __future__ import annotations

from decimal import Decimal

from .feeds.base import MachineRecord, ParsedFeed

MIB_PER_GIB = 1024


def offers_document(parsed: ParsedFeed) -> dict:
    """{"offers": [...], "refused": [{"record", "reason"}, ...]}, both in the document's order."""
    refused = parsed.rejected + parsed.rejected_speeds
    return {
        "offers": [offer_entry(record) for record in parsed.records],
        "refused": [{"record": rejection.label, "reason": rejection.reason} for rejection in refused],
    }


def offer_entry(record: MachineRecord) -> dict:
    return {
        "id": record.provider_machine_id,
        "gpu_type": record.gpu_type.name,
        "gpus": record.gpu_count,
        "memory_per_gpu_gib": _gib(record.memory_mib),
        "price_per_gpu_hour": str(record.price_per_gpu_hour),
        "interruptible_price_per_gpu_hour": _text(record.interruptible_price_per_gpu_hour),
        "interruptible": record.interruptible,
        "reserved_price_per_gpu_hour": _text(record.reserved_price_per_gpu_hour),
        "reserved_term_days": record.reserved_term_days,
        "country": record.country or None,
        "region": record.region or None,
        "available": record.available,
        "available_gpus": record.free_gpus if record.free_gpus_reported else None,
        "reliability": _text(record.reliability),
        "stock": record.stock or None,
    }


def _gib(mib: int | None) -> str | None:
    # MiB over 1024 is a finite decimal (at most ten places), so the text is exact.
    return None if mib is None else format(Decimal(mib) / MIB_PER_GIB, "f")


def _text(amount: Decimal | None) -> str | None:
    return None if amount is None else str(amount)
