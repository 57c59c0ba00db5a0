"""Static files served like a product's, on the embedded default and behind nginx alike: WhiteNoise
serves the files `collectstatic` wrote (names hashed by their content, each also gzip- and
Brotli-compressed ahead of time) with the encoding the browser asks for, and a hashed name with a
year's Cache-Control: a changed file gets a new name, so a kept copy is never stale."""
from __future__ import annotations

from whitenoise.middleware import WhiteNoiseMiddleware
from whitenoise.storage import CompressedManifestStaticFilesStorage

A_YEAR_SECONDS = 365 * 24 * 60 * 60


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    # WhiteNoise's own "forever" is ten years; a year is what caches are held to (RFC 9111 §5.2.2.1
    # leaves longer to the cache's discretion), and no hashed file lives that long unchanged.
    FOREVER = A_YEAR_SECONDS


class HashedStaticFilesStorage(CompressedManifestStaticFilesStorage):
    """collectstatic's hashed, compressed copies, named by their hashed names with DEBUG on too:
    Django's manifest storage names the source files while DEBUG is on, which would leave bin/run's
    pages on names that cannot be cached for long."""

    def url(self, name: str | None, force: bool = False) -> str:
        return super().url(name, force=True)
