"""The German pages hold no English outside product names: each main page is rendered in German
(the wizard with a result and with an empty answer, the calculators, Secure and Community, the
review, My launches, the stop page and a GPU type's price history) and every word a reader sees is checked against English words
that German never uses. Product and catalog names (models, GPUs, providers, licences, machine ids),
code (`<code>`) and what is marked as English (`lang="en"`: the switch to English) are left out."""
import re
import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from catalog.models import GpuType, LanguageModel, Machine, Provider
from nodelodge.launches.booking import launch
from nodelodge.launches.holding import stop
from nodelodge.refresh.history import hour_of
from nodelodge.refresh.models import ALL_COUNTRIES, PriceHistory
from sizing.countries import PLACE_NAMES
from tests.factories import load_shipped_catalog
from tests.helpers import LLAMA_8B

pytestmark = pytest.mark.django_db

# Words of English that German does not use, lower case ("in", "an", "was", "will", "per" are German
# too and are not here), and the places whose German name differs (Vienna: Wien).
ENGLISH = {
    "the", "and", "of", "with", "by", "from", "for", "to", "is", "are", "be", "been", "this", "that",
    "these", "those", "which", "what", "when", "where", "why", "who", "how", "your", "you", "our", "not",
    "or", "at", "on", "each", "every", "all", "any", "more", "less", "than", "it", "its", "they",
    "their", "has", "have", "were", "can", "may", "must", "should", "would", "into", "over",
    "under", "after", "before", "about", "if", "then", "only", "both", "none", "yes", "here", "there",
    "machine", "machines", "memory", "available", "price", "prices", "total", "active", "incl",
    "including", "fits", "needs", "tier", "tiers", "country", "countries", "launch", "launches",
    "booking", "bookings", "stop", "running", "ended", "cost", "costs", "hours", "minutes", "weights",
    "vision", "requests", "cheapest", "shown", "show", "sign", "signed", "account", "search", "models",
    "selected", "unknown", "outside", "raise", "raising", "opens", "adds", "left", "out", "fit",
    "limits", "precision",
    *(place.casefold() for place in PLACE_NAMES),
}
GERMAN = {"HTTP_ACCEPT_LANGUAGE": "de"}


def product_names() -> list[str]:
    """Names the pages show as they are in every language, longest first."""
    names = {"Node Lodge", "Secure", "Community", "Hugging Face", "LoRA", "QLoRA", "Mixture-of-Experts",
             "Mixture of Experts"}
    names.update(LanguageModel.objects.values_list("name", flat=True))
    names.update(LanguageModel.objects.values_list("license", flat=True))
    names.update(GpuType.objects.values_list("name", flat=True))
    names.update(Provider.objects.values_list("name", flat=True))
    names.update(Machine.objects.values_list("provider_machine_id", flat=True))
    from catalog.models import ImagePipeline, SpeechModel

    for model in (ImagePipeline, SpeechModel):
        names.update(model.objects.values_list("name", flat=True))
        names.update(model.objects.values_list("license", flat=True))
    names.update(ImagePipeline.components.rel.related_model.objects.values_list("name", flat=True))
    return sorted((name for name in names if name), key=len, reverse=True)


def english_words(html: str, names: list[str]) -> list[str]:
    """Each visible text node that holds an English word, with the words found."""
    body = html.split("<body", 1)[1].split(">", 1)[1]
    for pattern in (r"<(script|style|code|template)\b.*?</\1>", r'<(\w+)[^>]*\blang="en"[^>]*>.*?</\1>'):
        body = re.sub(pattern, " ", body, flags=re.S)
    found = []
    for node in re.split(r"<[^>]+>", body):
        text = re.sub(r"&[a-z]+;|&#\d+;", " ", node).strip()
        for name in names:
            text = text.replace(name, " ")
        text = re.sub(r"\S*_\S*", " ", text)  # identifiers: gpu_memory_utilization, text_encoder_2
        words = {word for word in re.findall(r"[A-Za-zÄÖÜäöüß]+", text) if not word.isupper()}
        english = sorted(word for word in words if word.casefold() in ENGLISH)
        if english:
            found.append(f"{text!r}: {', '.join(english)}")
    return found


@pytest.fixture
def german_client(client):
    load_shipped_catalog()
    Machine.objects.filter(provider__name="Alpine Hosts").update(region="Vienna")
    return client


def pages(client) -> dict[str, str]:
    user = get_user_model().objects.create_user(username="anna", password="a-long-test-passphrase")
    client.force_login(user)
    # A host's machine in Vienna (the fixture puts them all there), large enough for Llama 3.1 8B.
    machine = Machine.objects.filter(
        provider__name="Alpine Hosts", is_available=True, free_gpus__gte=2, memory_per_gpu_mib__gte=24_000
    ).order_by("pk").first()
    query = LLAMA_8B
    running = launch(
        user, machines=[(machine.pk, 1)], shown_price_per_hour=machine.price_per_gpu_hour, query_string=query,
        idempotency_key=uuid.uuid4().hex,
    ).booking
    ended = launch(
        user, machines=[(machine.pk, 1)], shown_price_per_hour=machine.price_per_gpu_hour, query_string=query,
        idempotency_key=uuid.uuid4().hex + "x",
    )
    stop(user, ended.booking.pk)
    gpu_type = machine.gpu_type
    now = timezone.now()
    PriceHistory.objects.bulk_create([
        PriceHistory(gpu_type=gpu_type, market="on_demand", country=country, hour=hour_of(now) - timedelta(hours=age),
                     cheapest_per_gpu_hour=Decimal("1.2345"), median_per_gpu_hour=Decimal("1.50005"), offers=3,
                     offers_in_stock=1, refreshes=4, refreshes_with_stock=age % 5 and 1, updated_at=now)
        for age in range(60) for country in (ALL_COUNTRIES, "AT")
    ])
    get = {
        "price history": f"/de/gpus/{gpu_type.slug}/history/?country=AT",
        "price history, bad filters": f"/de/gpus/{gpu_type.slug}/history/?market=spot&country=Austria",
        "price history, none": f"/de/gpus/{gpu_type.slug}/history/?market=reserved",
        "wizard with a result": "/de/?" + query + "&countries=AT,CH,DE,IT&budget=100",
        "a mixture of experts": "/de/?workload=inference&model=gpt-oss-120b&precision=4&context=4096&requests=1",
        "a model with a vision encoder": "/de/?workload=inference&model=gemma-3-27b&precision=16&context=4096"
                                          "&requests=1",
        "an empty answer": "/de/?workload=inference&model=llama-3-1-405b&precision=16&context=4096&requests=1"
                           "&countries=CH&max_price=1",
        "images": "/de/?workload=image&model=stable-diffusion-xl&precision=16",
        "a notebook": "/de/?workload=notebook&memory_gib=24",
        "calculators": "/de/calculators/?parameters=7B&precision=FP16",
        "Secure and Community": "/de/secure-and-community/",
        "review": f"/de/launch/review/?machine={machine.pk}&gpus=1&price_per_hour={machine.price_per_gpu_hour}"
                  f"&query={query.replace('&', '%26')}",
        "My launches": "/de/launches/",
        "stop": f"/de/launches/{running.pk}/stop/",
        "stop, ended": f"/de/launches/{ended.booking.pk}/stop/",
    }
    answers = {}
    for name, path in get.items():
        response = client.get(path, **GERMAN)
        assert response.status_code == 200, (name, response.status_code)
        answers[name] = response.content.decode()
    assert ", Wien" in answers["review"]  # the place, in German
    return answers


def test_the_german_pages_hold_no_english_outside_product_names(german_client):
    names = product_names()
    found = {name: english_words(html, names) for name, html in pages(german_client).items()}
    english = [f"{name}: {words}" for name, nodes in found.items() for words in nodes]
    assert not english, "English on German pages:\n" + "\n".join(english)


def test_the_check_finds_english_where_there_is_some():
    names = ["Llama 3.1 8B"]
    assert english_words('<body><h1>Launch by workload</h1><p lang="en">English</p></body>', names) == [
        "'Launch by workload': Launch, by"
    ]
    assert english_words("<body><p>Llama 3.1 8B · 117B total / 5.1B active</p><p>Wien, AT</p></body>", names) == [
        "'  · 117B total / 5.1B active': active, total"
    ]
    assert english_words("<body><td>Vienna</td><code>the</code></body>", names) == ["'Vienna': Vienna"]


# A figure as English writes it: a dollar sign before the amount, or a decimal point followed by other
# than three digits (German groups thousands with a point, always three digits: 1.000.000).
ENGLISH_NUMBER = re.compile(r"\$\s?\d|\d\.(?:\d{1,2}|\d{4,})(?!\d)")


def english_numbers(html: str, names: list[str]) -> list[str]:
    """Each visible text node (product names, code and addresses left out) with a figure as English
    writes it."""
    body = html.split("<body", 1)[1].split(">", 1)[1]
    body = re.sub(r"<(script|style|code|template)\b.*?</\1>|https?://\S+", " ", body, flags=re.S)
    found = []
    for node in re.split(r"<[^>]+>", body):
        text = node.strip()
        for name in names:
            text = text.replace(name, " ")
        # German dates (06.12.2026) and versions (vLLM 0.6.3) are not figures.
        text = re.sub(r"\b\d{2}\.\d{2}\.\d{4}\b|\b\d+\.\d+\.\d+\b", " ", text)
        if ENGLISH_NUMBER.search(text):
            found.append(repr(text))
    return found


def watch_pages(client) -> dict[str, str]:
    """The watch views and e-mails in German: the result with a refused watch (every field's message),
    My launches listing watches with every channel and Auto-Launch, the delete confirmation, the
    e-mail of a firing and of an Auto-Launch booking."""
    from decimal import Decimal

    from django.core import mail

    from nodelodge.watches import auto, evaluation
    from nodelodge.watches import services as watches
    from nodelodge.watches.models import Firing, Watch

    user = get_user_model().objects.create_user(username="berta", password="a-long-test-passphrase",
                                                email="berta@example.com")
    client.force_login(user)
    query = LLAMA_8B
    params = dict(pair.split("=") for pair in query.split("&"))
    answers = {"result, refused watch": client.post("/de/watches/", {
        "query": query, "condition": "cheapest_below", "price_per_hour": "zwölf", "machines": "",
        "webhook_url": "http://example.com/hook", "auto_launch": "1", "auto_launch_max_price": "1e12",
    }, **GERMAN).content.decode()}
    answers["result, refused count"] = client.post("/de/watches/", {
        "query": query, "condition": "at_least", "machines": "viele"}, **GERMAN).content.decode()
    cheapest = watches.create_watch(user, watches.WatchRequest(
        query=params, condition="cheapest_below", price_per_hour="1.5", language="de", email=True,
        auto_launch=True, auto_launch_max_price="0.10"))
    watches.create_watch(user, watches.WatchRequest(query=params, condition="at_least", machines=1,
                                                    language="de"))
    Watch.objects.filter(pk=cheapest.pk).update(webhook_url="https://hooks.example.com/nl",
                                                webhook_format="slack")
    mail.outbox.clear()
    Machine.objects.update(price_per_gpu_hour=Decimal("0.098"))
    evaluation.evaluate_watches()
    for firing in Firing.objects.filter(watch=cheapest):
        auto.launch_for(firing.pk)
    answers["My launches with watches"] = client.get("/de/launches/", **GERMAN).content.decode()
    answers["delete confirmation"] = client.post(f"/de/watches/{cheapest.pk}/delete/", **GERMAN).content.decode()
    for link in re.findall(r"https?://\S+", "\n".join(message.body for message in mail.outbox)):
        assert "/de/" in link, f"a German e-mail links to {link}"
    for number, message in enumerate(mail.outbox):
        answers[f"e-mail {number}: {message.subject}"] = f"<body>{message.subject}\n{message.body}</body>"
    assert mail.outbox, "no watch e-mail was sent"
    return answers


@pytest.mark.django_db(transaction=True)
def test_the_german_watch_pages_and_emails_hold_no_english_word_or_number(german_client, monkeypatch):
    from nodelodge.watches import evaluation, tasks

    monkeypatch.setattr(evaluation, "_queue_delivery", lambda firing_id: tasks.deliver_firing(firing_id))
    names = product_names()
    pages = watch_pages(german_client)
    english = [f"{name}: {words}" for name, html in pages.items()
               for words in english_words(re.sub(r"https?://\S+", " ", html), names)]
    numbers = [f"{name}: {found}" for name, html in pages.items() for found in english_numbers(html, names)]
    assert not english, "English on German watch pages:\n" + "\n".join(english)
    assert not numbers, "English-formatted numbers on German watch pages:\n" + "\n".join(numbers)
