"""The published figures the shipped catalog is checked against."""
import csv
from pathlib import Path

import pytest
from django.conf import settings


def reference_dir() -> Path:
    """The published figures the catalog is checked against: a copy kept in the repository (with
    their sources), so the check runs on any machine."""
    folder = Path(settings.BASE_DIR) / "catalog" / "data" / "reference"
    if not folder.is_dir():
        pytest.fail(f"The published reference figures are missing: expected the folder {folder}.")
    return folder


def read_reference(name: str) -> list[dict]:
    with open(reference_dir() / name, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))
