"""Every marked string has a German translation: no .po file in the repository (the console's in
locale/, the sizing engine's in sizing/locale/) has a missing or fuzzy entry, each translation keeps
its placeholders, and the console's catalog holds exactly the strings its code and templates mark."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import polib
import pytest
from django.conf import settings

ROOT = Path(settings.BASE_DIR)
PLACEHOLDER = re.compile(r"%\([a-z_]+\)[sd]|%%|%[sd]")
# What makemessages reads, and what it must not: the virtualenv, the sizing engine (its own catalog,
# made in sizing/), the tests and what the tests and collectstatic write.
IGNORED = [".venv", "sizing", "tests", "staticfiles", "test-artifacts", "node_modules"]


def catalogs() -> list[Path]:
    return sorted(
        path for path in ROOT.glob("**/locale/*/LC_MESSAGES/*.po")
        if ".venv" not in path.relative_to(ROOT).parts
    )


def untranslated(entry: polib.POEntry) -> bool:
    if entry.msgid_plural:
        return not entry.msgstr_plural or not all(entry.msgstr_plural.values())
    return not entry.msgstr


def test_the_console_has_a_german_catalog():
    assert ROOT / "locale" / "de" / "LC_MESSAGES" / "django.po" in catalogs()


@pytest.mark.parametrize("path", catalogs(), ids=lambda path: str(path.relative_to(ROOT)))
def test_every_entry_is_translated_and_none_is_fuzzy(path):
    catalog = polib.pofile(str(path))
    assert catalog.metadata.get("Language"), f"{path} names no language"
    assert not catalog.metadata_is_fuzzy, f"{path}: the header is marked fuzzy"
    missing = [entry.msgid for entry in catalog if untranslated(entry)]
    fuzzy = [entry.msgid for entry in catalog if "fuzzy" in entry.flags]
    assert not missing, f"{path}: {len(missing)} without a translation, e.g. {missing[:3]}"
    assert not fuzzy, f"{path}: {len(fuzzy)} fuzzy, e.g. {fuzzy[:3]}"


@pytest.mark.parametrize("path", catalogs(), ids=lambda path: str(path.relative_to(ROOT)))
def test_every_translation_keeps_its_placeholders(path):
    for entry in polib.pofile(str(path)):
        wanted = sorted(PLACEHOLDER.findall(entry.msgid_plural or entry.msgid))
        # German's first form is its singular (plural=(n != 1)): it keeps the singular's placeholders or
        # the plural's, as the English singular may leave out what one of a thing needs not say.
        singular = set(PLACEHOLDER.findall(entry.msgid))
        for form, text in entry.msgstr_plural.items() if entry.msgid_plural else [(0, entry.msgstr)]:
            found = PLACEHOLDER.findall(text)
            assert sorted(found) == wanted or (entry.msgid_plural and (
                set(found) == set(wanted) or (int(form) == 0 and set(found) == singular))
            ), f"{path}: {entry.msgid!r} -> {text!r}"


@pytest.mark.parametrize("path", catalogs(), ids=lambda path: str(path.relative_to(ROOT)))
def test_msgfmt_compiles_it(path, tmp_path):
    result = subprocess.run(
        ["msgfmt", "--check", "-o", str(tmp_path / "django.mo"), str(path)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_the_console_catalog_holds_exactly_what_the_code_marks(tmp_path):
    """makemessages over a copy of the sources: a newly marked string without a translation, or a
    translation whose string is gone, fails here."""
    copy = tmp_path / "repo"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".git", ".venv", "test-artifacts", "staticfiles",
                                                             "*.mo", "__pycache__", "db.sqlite3"))
    command = [sys.executable, "manage.py", "makemessages", "-l", "de", "--no-obsolete"]
    command += [f"--ignore={name}" for name in IGNORED]
    result = subprocess.run(command, cwd=copy, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr

    def keys(path: Path) -> set[tuple]:
        return {(e.msgctxt, e.msgid, e.msgid_plural) for e in polib.pofile(str(path)) if not e.obsolete}

    committed = keys(ROOT / "locale" / "de" / "LC_MESSAGES" / "django.po")
    marked = keys(copy / "locale" / "de" / "LC_MESSAGES" / "django.po")
    assert not marked - committed, f"marked but not in locale/de (run makemessages): {sorted(marked - committed)[:5]}"
    assert not committed - marked, f"in locale/de but marked nowhere: {sorted(committed - marked)[:5]}"
