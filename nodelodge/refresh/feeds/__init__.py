"""Feed formats, one module each, found by Provider.feed_format."""
from .base import FeedAdapter, FeedError
from .gpuhunt import GpuhuntOffers
from .lambda_cloud import LambdaInstanceTypes
from .nodelodge_v1 import NodeLodgeV1
from .prime import PrimeAvailability
from .runpod import RunPodGpuTypes
from .skypilot import SkyPilotCatalog
from .vast import VastOffers

ADAPTERS: dict[str, FeedAdapter] = {
    adapter.format: adapter
    for adapter in (
        NodeLodgeV1(), VastOffers(), RunPodGpuTypes(), LambdaInstanceTypes(), SkyPilotCatalog(),
        GpuhuntOffers(), PrimeAvailability(),
    )
}
# The names `import_offers --format` takes: the marketplace's short name, or the format itself.
SHORT_NAMES: dict[str, str] = {adapter.short_name: name for name, adapter in ADAPTERS.items()}


def adapter_for(feed_format: str) -> FeedAdapter:
    try:
        return ADAPTERS[feed_format]
    except KeyError:
        raise FeedError(f"no reader for feed format {feed_format!r}") from None
