"""How GPU names are compared: the catalog's names and slugs, and the aliases marketplaces use.

Marketplaces spell one board many ways ("H100_SXM5", "H100 SXM5", "h100-sxm5"), so a name is compared
by its key: case ignored, and spaces, hyphens and underscores dropped. Pure Python, no database.
"""
import re

_SEPARATORS = re.compile(r"[\s_\-]+")


def gpu_name_key(name: str) -> str:
    """The form two spellings of one GPU name share ("NVIDIA GeForce RTX 4090" -> "nvidiageforcertx4090")."""
    return _SEPARATORS.sub("", name).casefold()
