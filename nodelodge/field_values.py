"""A form's values or errors as the templates read them."""
from __future__ import annotations


class FieldValues(dict):
    """Field name → value (or message); a field not given reads as empty text. The template language
    reads `values.sort` by key, then by attribute, then asks `dir()` and tries a list index before it
    gives up on a missing key: about 18 µs each, some sixty times per result panel (the list controls'
    selects compare every option with the chosen one). Python code reading it with `.get()` or `in`
    sees a plain dict."""

    __slots__ = ()

    def __missing__(self, key: object) -> str:
        return ""
