"""The benchmark's load phases as the command line sets them (no database: the load itself runs only in a
benchmark run, through nginx and gunicorn)."""
from tests.bench.runner import LOAD_TARGETS, parse


def test_the_burst_takes_its_own_clients_and_seconds_and_the_issues_targets():
    options = parse(["--burst-users", "7", "--burst-seconds", "9"])
    assert (options.burst_users, options.burst_seconds) == (7, 9)
    quick = parse(["--quick"])
    assert (quick.burst_users, quick.burst_seconds) == (50, 20)
    assert parse(["--no-load"]).load_seconds == 0
    # #41: the burst at least 150 req/s with p95 at most 500 ms; the mix's p95 at most 250 ms
    assert (LOAD_TARGETS["burst_throughput"], LOAD_TARGETS["burst_p95"], LOAD_TARGETS["p95"]) == (150, 500, 250)
