"""The README and docs/ hold together: every relative link and picture points to a file that exists,
every page under docs/ is reached from the README, and BENCHMARKS.md keeps its shape (the latest run,
a one-screen history, the whole log under docs/) through the benchmark's own rewrites."""
import re
from pathlib import Path

from tests.bench import runner
from tests.bench.swap import NOTES_HEADING

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
# Pages another part of the work writes; linked now, present once it lands.
FENCED = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SOURCE = re.compile(r"""<img\b[^>]*\bsrc=["']([^"']+)["']""", re.I)


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


def relative_targets(page: Path) -> list[tuple[str, Path]]:
    """(as written, the file it names) for every relative link and picture of a Markdown page."""
    text = INLINE_CODE.sub("", FENCED.sub("", page.read_text()))
    found = []
    for written in LINK.findall(text) + SOURCE.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", written, re.I) or written.startswith("#"):
            continue  # another site, mail, or a place on the same page
        path = written.split("#", 1)[0].split("?", 1)[0]
        found.append((written, (page.parent / path).resolve()))
    return found


def test_every_relative_link_and_picture_points_to_a_file_that_exists():
    broken = [
        f"{page.relative_to(REPO)}: {written}"
        for page in pages()
        for written, target in relative_targets(page)
        if not target.exists()
    ]
    assert broken == []
    # The check reads what it should: the README's pictures and the docs' links back up are among them.
    readme = dict(relative_targets(REPO / "README.md"))
    assert readme["docs/screenshots/phone-result.png"] == DOCS / "screenshots" / "phone-result.png"
    assert any(target == REPO / "SECURITY.md" for _, target in relative_targets(DOCS / "feed-format.md"))


def test_every_page_under_docs_is_reached_from_the_readme():
    reached, waiting = set(), [REPO / "README.md"]
    while waiting:
        page = waiting.pop()
        for _, target in relative_targets(page):
            if target.suffix == ".md" and target.exists() and target not in reached:
                reached.add(target)
                waiting.append(target)
    assert set(DOCS.rglob("*.md")) - reached == set()
    assert {REPO / "ACCURACY.md", REPO / "SECURITY.md", REPO / "BENCHMARKS.md"} <= reached


def test_the_readme_stays_short_and_opens_with_the_two_commands():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 200
    opening = "\n".join(lines[:6])
    assert "bin/run     # set up and run the console" in opening and "http://127.0.0.1:8000" in opening
    assert "bin/test    # set up and run the whole test suite" in opening
    assert (REPO / ".ci" / "run").read_text().strip().endswith("exec bin/test")


def test_benchmarks_opens_with_the_latest_run_then_a_one_screen_history_linking_the_log():
    text = (REPO / "BENCHMARKS.md").read_text()
    headings = re.findall(r"^## .*$", text, flags=re.M)
    assert headings == ["## Figures", "## Per query", "## Result panel swap in the browser", NOTES_HEADING]
    history = text[text.index(NOTES_HEADING):]
    assert len(history.splitlines()) <= 30
    assert "(docs/benchmarks-log.md)" in history
    assert "## Before / after" in (DOCS / "benchmarks-log.md").read_text()


def test_a_benchmark_rewrite_keeps_the_history():
    kept = runner.carried_over((REPO / "BENCHMARKS.md").read_text())
    assert NOTES_HEADING in kept and "(docs/benchmarks-log.md)" in kept
    assert "## Result panel swap in the browser" in kept and "## Figures" not in kept
