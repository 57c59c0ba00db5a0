from tests.wizard.conftest import make_machine, models_and_gpus, providers, small_fleet  # noqa: F401
