"""The German formulas say each thing one way: "Token pro Schritt" (never "Tokens je Schritt"), a
figure's unit "Bytes" (never "× 2 Byte"; "1 Byte" stays singular), and a model's hidden size "Hidden" (never "versteckt")."""
import re
from pathlib import Path

import polib
import pytest
from django.conf import settings

ROOT = Path(settings.BASE_DIR)
CATALOGS = [ROOT / "sizing" / "locale" / "de" / "LC_MESSAGES" / "django.po",
            ROOT / "locale" / "de" / "LC_MESSAGES" / "django.po"]
# The variant a German reader met beside the one the catalogs use everywhere else.
VARIANTS = {
    "Tokens je Schritt": re.compile(r"Tokens? je Schritt"),
    "a figure's unit in the singular (Byte)": re.compile(r"(?:(?<!\d)(?!1 )\d+|%\([a-z_]+\)s|\]) Byte\b(?!-)"),
    "versteckt": re.compile(r"\bversteckt\b"),
}


def translations(path: Path) -> list[str]:
    found = []
    for entry in polib.pofile(str(path)):
        found += [entry.msgstr] if not entry.msgid_plural else [
            text for index, text in entry.msgstr_plural.items() if int(index) > 0]
    return found


@pytest.mark.parametrize("path", CATALOGS, ids=lambda path: str(path.relative_to(ROOT)))
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_german_formulas_say_each_term_one_way(path, variant):
    said = [text for text in translations(path) if VARIANTS[variant].search(text)]
    assert not said, f"{variant}: {said[:3]}"


def test_the_german_what_if_formula_says_token_pro_schritt_and_hidden(client, models_and_gpus):
    html = client.get("/de/calculators/?model=llama-3-1-8b&gpu_memory_gib=79,19&max_model_len=8192").content.decode()
    assert "Token pro Schritt × (2 × 4.096 Hidden +" in html and "versteckt" not in html
