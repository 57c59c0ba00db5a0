"""The benchmark itself stays runnable: a small in-process run fills the table (no targets)."""
import pytest

from tests.bench.runner import parse, run, write_report

pytestmark = pytest.mark.postgresql(
    reason="the benchmark measures the PostgreSQL deployment: the kept fleet counts against the scan"
)


def test_a_smoke_run_writes_every_figure_for_a_thousand_machines(db, tmp_path):
    out = tmp_path / "BENCHMARKS.md"
    options = parse(["--smoke", "--out", str(out)])
    report = run(options)
    write_report(report, options)

    figures = {row.figure: row for row in report.rows}
    for name in ("generate fleet (fleet counts kept)", "result panel, test client: median", "result panel, test client: p95",
                 "API, test client: median", "API, test client: p95",
                 "bare main query (slowest SQL statement alone): median",
                 "result panel ÷ bare main query (sum of per-query medians)",
                 "SQL queries per request (most, result panel or API)"):
        assert figures[name].fleet == "1,000"
        assert figures[name].value is not None and figures[name].value > 0
    assert figures["SQL queries per request (most, result panel or API)"].value <= 12
    # Request figures carry their floor; the scan's figure, measured on the same fleet, is beside them.
    assert figures["result panel, test client: median"].floor > 0
    assert figures["result by scanning the fleet (the count before kept counts): median"].value > 0
    assert all(row.passed is None for row in report.rows)  # a smoke run judges nothing
    assert len(report.details) == 4  # three queries and one throughput plan
    assert figures["throughput plan, result panel, test client: median"].value > 0
    text = out.read_text()
    assert "| result panel, test client: median | 1,000 |" in text
    assert "| Figure | Fleet | Value | Floor | Target | Result |" in text
    assert "| Commit |" in text and "| CPU |" in text
