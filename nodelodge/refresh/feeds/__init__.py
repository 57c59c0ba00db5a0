"""Feed formats, one module each, found by Provider.feed_format."""
from .base import FeedAdapter, FeedError
from .nodelodge_v1 import NodeLodgeV1

ADAPTERS: dict[str, FeedAdapter] = {adapter.format: adapter for adapter in (NodeLodgeV1(),)}


def adapter_for(feed_format: str) -> FeedAdapter:
    try:
        return ADAPTERS[feed_format]
    except KeyError:
        raise FeedError(f"no reader for feed format {feed_format!r}") from None
