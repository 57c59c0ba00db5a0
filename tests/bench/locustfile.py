"""Sustained load for the benchmark: users who run a wizard query, read the answer and ask again.

Each user mixes the HTMX result panel (three in four requests) and the JSON API. The query strings
come from queries.py, with the `shown` parameter the benchmark computed (env BENCH_SHOWN_QUERIES,
one query string per line)."""
import os
import random

from locust import HttpUser, between, task

SHOWN_QUERIES = [line for line in os.environ.get("BENCH_SHOWN_QUERIES", "").splitlines() if line]
API_QUERIES = [line for line in os.environ.get("BENCH_API_QUERIES", "").splitlines() if line]
HTMX_HEADERS = {"HX-Request": "true", "HX-Target": "result"}


class WizardUser(HttpUser):
    # A person reads the answer before changing a field: one to three seconds between requests.
    wait_time = between(1, 3)

    @task(3)
    def result_panel(self):
        self.client.get("/?" + random.choice(SHOWN_QUERIES), headers=HTMX_HEADERS, name="result panel")

    @task(1)
    def api(self):
        self.client.get("/api/v1/recommendations?" + random.choice(API_QUERIES), name="API")
