"""Templates are read from disk and compiled once per process, not on every answer: under the
partials' loader (django-template-partials, which finds `file.html#partial`) is Django's cached
loader, in production (DEBUG off) as on the embedded run. Touches no database."""
import subprocess
import sys

from django.template import engines
from django.template.loaders.cached import Loader as CachedLoader

from tests.hardening.helpers import REPO, production_env


def test_the_console_compiles_each_template_once_per_process():
    partials = engines["django"].engine.template_loaders[0]
    [loader] = partials.loaders
    assert isinstance(loader, CachedLoader)
    first = loader.get_template("wizard/wizard.html")
    assert loader.get_template("wizard/wizard.html") is first


def test_production_settings_use_the_cached_loader():
    code = ("import django; django.setup(); from django.template import engines; "
            "print(type(engines['django'].engine.template_loaders[0].loaders[0]).__module__)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=production_env(), capture_output=True,
                         text=True, timeout=60, check=True).stdout.strip()
    assert out == "django.template.loaders.cached"
