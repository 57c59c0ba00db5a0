"""The swap benchmark stays runnable and measures what it says: each select change settles a new
result panel showing the chosen precision (no time is judged here; `python -m tests.bench.swap` does)."""
import pytest

from catalog.services import load_catalog
from tests.bench import runner
from tests.bench.swap import PRECISIONS, _section, swap_times, write_section

pytestmark = pytest.mark.browser


def test_each_timed_select_change_settles_a_panel_with_the_chosen_precision(live_server, page, transactional_db):
    load_catalog()
    page.set_viewport_size({"width": 1440, "height": 900})
    times = swap_times(page, live_server.url, 4)

    assert len(times) == 4 and all(0 < ms < 10_000 for ms in times)
    # The last change chose PRECISIONS[3 % 3]; the breakdown on screen is the one for it.
    assert page.locator("#id_precision").input_value() == PRECISIONS[0]
    assert f"precision={PRECISIONS[0]}" in page.url


def test_the_section_replaces_its_earlier_self_before_the_hand_written_notes(tmp_path):
    out = tmp_path / "BENCHMARKS.md"
    out.write_text("# Benchmarks\n\n## Figures\n\nx\n\n## History\n\nnotes\n")
    write_section(out, _section([200.0, 120.0, 130.0], "then"))
    write_section(out, _section([100.0, 110.0, 90.0], "now"))

    text = out.read_text()
    assert text.count("## Result panel swap in the browser") == 1
    assert "| median | 100.0 ms | ≤ 80 ms | **FAIL** |" in text and "then" not in text
    assert text.index("## Figures") < text.index("## Result panel swap") < text.index("## History")
    assert text.endswith("notes\n")


def test_a_full_benchmark_run_keeps_the_browser_swap_figures(tmp_path):
    out = tmp_path / "BENCHMARKS.md"
    out.write_text("# Benchmarks\n\n## Figures\n\nold figures\n\n## History\n\nnotes\n")
    write_section(out, _section([100.0, 90.0, 110.0], "now"))

    text = "# Benchmarks\n\n## Per query\n" + runner.carried_over(out.read_text())
    assert "old figures" not in text
    assert "| median | 100.0 ms | ≤ 80 ms | **FAIL** |" in text
    assert text.index("## Per query") < text.index("## Result panel swap") < text.index("## History")
    assert text.endswith("notes\n")
