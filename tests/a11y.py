"""axe-core in the browser tests: the engine ships inside the `axe-playwright-python` package
(axe.min.js), so nothing is fetched from a CDN. Serious and critical violations fail the test."""
from __future__ import annotations

from axe_playwright_python.sync_playwright import Axe

_AXE = Axe()
FAILING_IMPACTS = {"serious", "critical"}


def assert_accessible(page, state: str) -> None:
    results = _AXE.run(page)
    violations = [v for v in results.response["violations"] if v.get("impact") in FAILING_IMPACTS]
    assert not violations, f"axe, {state}: " + "; ".join(
        f"{v['id']} ({v['impact']}): {v['help']} at {[node['target'] for node in v['nodes']][:3]}"
        for v in violations
    )
