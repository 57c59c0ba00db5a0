from django.conf import settings
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.views.decorators.http import require_GET

from catalog.models import Provider

from .selectors import demo_feed_document


@require_GET
def demo_feed(request, slug: str):
    """A provider feed served by the console itself, so the embedded run can show a refresh happen."""
    if not settings.DEMO_FEEDS_ENABLED:
        raise Http404("Demo feeds are off.")
    provider = get_object_or_404(Provider, slug=slug)
    response = JsonResponse(demo_feed_document(provider, timezone.now()), json_dumps_params={"indent": None})
    response["Cache-Control"] = "no-store"
    return response
