"""Sustained load for the benchmark (runner.py `run_load` starts locust with one or more of these user
classes against nginx in front of gunicorn; the query strings come from queries.py through the
environment, one per line).

- `MixUser`: the issue's mix of what people ask for, by weight: 25 % result pages, 20 % HTMX results,
  5 % HTMX model lists (a search typed), 10 % German pages, 20 % API recommendations, 10 % API
  estimates, 5 % API models, 5 % calculators; a person reads between requests (BENCH_WAIT seconds,
  "low,high", default 0.5 to 1.5).
- `DeepPageUser` (4 of them): loops without pause on deep pages: the last page the window reaches
  (page 40 of the page's 25, page 10 of the API's 100), each with another price limit so no answer is
  served again, and the page past the window (the reproduction, page 99,999). With BENCH_DEEP_SOURCE
  they connect from that loopback address (127.0.0.2), another client than the probe's, and a 429 of
  the per-address limit, or a 503 with Retry-After when every slot for dear answers is taken, is what
  such a client gets: counted apart, not as an error.
- `HostileUser` (4 of them): loops without pause on the dearest requests a visitor can send
  (BENCH_HOSTILE_PATHS, one per line: hostile.py's, parameters at the schema's limits), two clients
  from each of the addresses in BENCH_HOSTILE_SOURCES; a 429 of the per-address limit and a 503 of
  the plan-search slots are counted apart (and asked again after 50 ms, not at once: the load
  generator shares the console's two cores).
- `ProbeUser` (one): a normal API call, computed each time (another budget every call), whose p95 is
  compared with and without the deep pages; one every 0.6 s, within the API's per-address limit.
"""
import os
import random
import time

from locust import HttpUser, between, constant, task
from requests.adapters import HTTPAdapter

SHOWN_QUERIES = [line for line in os.environ.get("BENCH_SHOWN_QUERIES", "").splitlines() if line]
PAGE_QUERIES = [line for line in os.environ.get("BENCH_API_QUERIES", "").splitlines() if line]
API_QUERIES = PAGE_QUERIES
PROBE_QUERY = os.environ.get("BENCH_PROBE_QUERY", "")
WAIT = tuple(float(part) for part in os.environ.get("BENCH_WAIT", "0.5,1.5").split(","))
HTMX_RESULT = {"HX-Request": "true", "HX-Target": "result"}
HTMX_MODELS = {"HX-Request": "true", "HX-Target": "model-list"}
SEARCHES = ("llama", "qwen", "whisper", "flux", "mix", "70")
WORKLOADS = ("", "inference", "finetune", "image", "notebook")
CALCULATIONS = (
    "target=180000&measured=2500&efficiency=75&redundancy=1",
    "parameters=8B&precision=16",
    "parameters=70000000000&precision=4",
    "target=20000&measured=1200&efficiency=60&redundancy=2&parameters=405B&precision=8",
)


class ConsoleUser(HttpUser):
    abstract = True

    def on_start(self):
        self.client.verify = False  # the benchmark's own self-signed certificate, on loopback


class MixUser(ConsoleUser):
    wait_time = between(*WAIT)

    @task(25)
    def result_page(self):
        self.client.get("/?" + random.choice(PAGE_QUERIES), name="result page")

    @task(20)
    def htmx_result(self):
        self.client.get("/?" + random.choice(SHOWN_QUERIES), headers=HTMX_RESULT, name="HTMX result")

    @task(5)
    def htmx_model_list(self):
        query = random.choice(SHOWN_QUERIES) + "&q=" + random.choice(SEARCHES)
        self.client.get("/?" + query, headers=HTMX_MODELS, name="HTMX model list")

    @task(10)
    def german_page(self):
        self.client.get("/de/?" + random.choice(PAGE_QUERIES), name="German page")

    @task(20)
    def api_recommendations(self):
        self.client.get("/api/v1/recommendations?" + random.choice(API_QUERIES), name="API recommendations")

    @task(10)
    def api_estimate(self):
        self.client.get("/api/v1/estimate?" + random.choice(API_QUERIES), name="API estimate")

    @task(5)
    def api_models(self):
        self.client.get("/api/v1/models?workload=" + random.choice(WORKLOADS), name="API models")

    @task(5)
    def calculators(self):
        self.client.get("/calculators/?" + random.choice(CALCULATIONS), name="calculators")


class SourceAddressAdapter(HTTPAdapter):
    """Connections from one local address (any of 127/8 reaches the loopback)."""

    def __init__(self, source: str):
        self.source = source
        super().__init__()

    def init_poolmanager(self, *args, **kwargs):
        kwargs["source_address"] = (self.source, 0)
        return super().init_poolmanager(*args, **kwargs)


class DeepPageUser(ConsoleUser):
    fixed_count = 4
    wait_time = constant(0)

    def on_start(self):
        super().on_start()
        source = os.environ.get("BENCH_DEEP_SOURCE")
        if source:
            self.client.mount("https://", SourceAddressAdapter(source))

    def _get(self, path: str, name: str, answered: tuple[int, ...] = (200,)):
        with self.client.get(path, name=name, catch_response=True) as response:
            if response.status_code == 429:  # the per-address limit, as this client meets it
                response.request_meta["name"] = "deep-page clients: refused by the per-address limit"
                response.success()
            elif response.status_code == 503 and response.headers.get("Retry-After"):
                # A deep page is a dear answer: shed at once when every slot for them is taken
                # (nodelodge/hardening/slots.py), as documented, not an error.
                response.request_meta["name"] = "deep-page clients: shed, 503 with Retry-After"
                response.success()
            elif response.status_code in answered:
                response.success()
            else:
                response.failure(f"HTTP {response.status_code}")

    @task(2)
    def last_page_in_the_window(self):
        price = f"{random.randint(200, 100_000) / 100:.2f}"  # another answer each time: nothing served again
        self._get(f"/?{PROBE_QUERY}&max_price={price}&page=40", "deep page (page 40 of 25)")

    @task(2)
    def last_api_page_in_the_window(self):
        price = f"{random.randint(200, 100_000) / 100:.2f}"
        self._get(f"/api/v1/recommendations?{PROBE_QUERY}&max_price={price}&page=10",
                  "deep API page (page 10 of 100)")

    @task(1)
    def past_the_window(self):
        # Refused in words with a 404, as documented.
        self._get(f"/api/v1/recommendations?{PROBE_QUERY}&page=99999", "page past the window", answered=(404,))


HOSTILE_PATHS = [line for line in os.environ.get("BENCH_HOSTILE_PATHS", "").splitlines() if line]
HOSTILE_SOURCES = [s for s in os.environ.get("BENCH_HOSTILE_SOURCES", "").split(",") if s]


class HostileUser(ConsoleUser):
    fixed_count = 4
    wait_time = constant(0)
    started = 0  # which address the next client connects from: two clients each

    def on_start(self):
        super().on_start()
        if HOSTILE_SOURCES:
            source = HOSTILE_SOURCES[(HostileUser.started // 2) % len(HOSTILE_SOURCES)]
            HostileUser.started += 1
            self.client.mount("https://", SourceAddressAdapter(source))

    @task
    def dearest_request(self):
        refused = False
        with self.client.get(random.choice(HOSTILE_PATHS), name="hostile request", catch_response=True) as response:
            if response.status_code == 429:
                response.request_meta["name"] = "hostile clients: refused by the per-address limit"
                response.success()
                refused = True
            elif response.status_code == 503 and response.headers.get("Retry-After"):
                # Shed at once: every plan-search slot taken (nodelodge/hardening/slots.py).
                response.request_meta["name"] = "hostile clients: shed, 503 with Retry-After"
                response.success()
                refused = True
            elif response.status_code < 500:
                response.success()
            else:
                response.failure(f"HTTP {response.status_code}")
        if refused:
            # Asks again at once, as a hostile client would, but for 50 ms: the load generator runs on
            # the console's own two cores, where a real attacker's loop would not.
            time.sleep(0.05)


class ProbeUser(ConsoleUser):
    fixed_count = 1
    wait_time = constant(0.6)

    @task
    def normal_api_call(self):
        budget = random.randint(100, 1_000_000)  # computed each time, as a new question is
        self.client.get(f"/api/v1/recommendations?{PROBE_QUERY}&budget={budget}", name="probe: API call")
