"""The engine's one door to translation and number formatting; pure Python, English by default.

The engine writes every word through `gettext`, `ngettext` and `pgettext` and every figure it shows
through `format_number`. Without a host these are English: the message itself, "," between thousands
and "." before decimals. A host installs its own (`install`): the console installs Django's, so the
words and figures follow the language it activates for each request (`sizing.apps`).

Words fixed at import (tables of labels) are marked with `gettext_noop` and translated where they are
read: `TranslatedWords` is such a table, `LazyText` a single such label.

Strings with several values use named placeholders ("%(count)s") so a translation may reorder them.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from decimal import Decimal
from fractions import Fraction
from types import SimpleNamespace
from typing import Any, Protocol, cast

from .rounding import round_half_up


def _english_ngettext(singular: str, plural: str, n: int) -> str:
    return singular if n == 1 else plural


def english_number(value: int | Decimal, places: int | None = None, grouping: bool = True) -> str:
    comma = "," if grouping else ""
    if value == 0:
        # a zero rounded from a small negative reads 0, not -0
        value = value.copy_abs() if isinstance(value, Decimal) else abs(value)
    if isinstance(value, int):
        return format(value, comma or "d")
    return format(value, f"{comma}f")


# The installed functions; the English defaults until a host installs its own.
_DEFAULTS: dict[str, Callable[..., Any]] = {
    "gettext": lambda message: message,
    "ngettext": _english_ngettext,
    "pgettext": lambda context, message: message,
    "format_number": english_number,
    "language": lambda: "en",
}


class _Hooks(Protocol):
    gettext: Callable[[str], str]
    ngettext: Callable[[str, str, int], str]
    pgettext: Callable[[str, str], str]
    format_number: Callable[[int | Decimal, int | None, bool], str]
    language: Callable[[], str | None]


_hooks = cast(_Hooks, SimpleNamespace(**_DEFAULTS))
_english = cast(_Hooks, SimpleNamespace(**_DEFAULTS))

# Set inside `words_unread`: the English defaults stand in for what is installed.
_unread: ContextVar[bool] = ContextVar("sizing_words_unread", default=False)


def _installed() -> _Hooks:
    return _english if _unread.get() else _hooks


@contextmanager
def words_unread() -> Iterator[None]:
    """Inside, the engine writes its words in English and its figures as `english_number` does,
    whatever is installed: for sizings asked for their bytes alone (an empty answer's halvings of the
    context and the requests, a dozen estimates whose words nobody reads), which then cost less than
    half as much. Their words must not be shown nor kept where shown words are."""
    token = _unread.set(True)
    try:
        yield
    finally:
        _unread.reset(token)


# Set inside `words_remembered`: each message's words in the language active there, asked of the host
# once. Keys: the message, ("n", singular, plural, n), ("p", context, message), ("f", type, digits,
# places, grouping) for a figure; LANGUAGE_KEY: the code.
_remembered: ContextVar[dict[object, str] | None] = ContextVar("sizing_words_remembered", default=None)
LANGUAGE_KEY = ("language",)


@contextmanager
def words_remembered() -> Iterator[None]:
    """Inside, each message is translated once and its words remembered, and the active language is
    asked once: an answer words the same few hundred messages and figures for each of its rows, and
    each asking of Django's active translation costs more than the lookup it does. The language must
    not change inside (an answer is worded in one language; `translation.override` goes around it).
    Nested, the outer one's memory is kept."""
    if _remembered.get() is not None:
        yield
        return
    token = _remembered.set({})
    try:
        yield
    finally:
        _remembered.reset(token)


def _remembering(key: object, translate: Callable[[], str]) -> str:
    """The remembered words for `key`, or `translate()`'s; remembered inside `words_remembered` only."""
    if _unread.get():
        return translate()
    memo = _remembered.get()
    if memo is None:
        return translate()
    words = memo.get(key)
    if words is None:
        words = memo[key] = translate()
    return words


def install(
    gettext: Callable[[str], str] | None = None,
    ngettext: Callable[[str, str, int], str] | None = None,
    pgettext: Callable[[str, str], str] | None = None,
    format_number: Callable[..., str] | None = None,
    language: Callable[[], str] | None = None,
) -> None:
    """Replace the English defaults; an argument left out keeps what is installed."""
    for name, function in (
        ("gettext", gettext),
        ("ngettext", ngettext),
        ("pgettext", pgettext),
        ("format_number", format_number),
        ("language", language),
    ):
        if function is not None:
            setattr(_hooks, name, function)


def uninstall() -> None:
    """Back to plain English (for tests of the defaults)."""
    for name, function in _DEFAULTS.items():
        setattr(_hooks, name, function)


def gettext(message: str) -> str:
    return _remembering(message, lambda: _installed().gettext(message))


def ngettext(singular: str, plural: str, n: int) -> str:
    return _remembering(("n", singular, plural, n), lambda: _installed().ngettext(singular, plural, n))


def pgettext(context: str, message: str) -> str:
    return _remembering(("p", context, message), lambda: _installed().pgettext(context, message))


def gettext_noop(message: str) -> str:
    """Marks a message for the catalogue without translating it (it is translated where it is read)."""
    return message


def language() -> str:
    """The active language's code ("en", "de")."""
    return _remembering(LANGUAGE_KEY, lambda: _hooks.language() or "en")


def format_number(
    value: int | Decimal | float | Fraction, places: int | None = None, grouping: bool = True
) -> str:
    """A figure as the active language writes it: 8,030,261,248 and 19.55 in English, 8.030.261.248 and
    19,55 in German. A Decimal keeps its own digits unless `places` is given: then it is rounded by
    `sizing.rounding.round_half_up`, the one rounding policy."""
    if isinstance(value, Fraction):
        value = Decimal(value.numerator) / Decimal(value.denominator)
    elif isinstance(value, float):
        value = Decimal(str(value))
    if places is not None:
        value = round_half_up(value, places)
    # An answer formats the same prices and sizes for row after row: remembered by the figure's own
    # digits (Decimal("2.5") and Decimal("2.50") are written apart), as the words are.
    figure = value
    return _remembering(("f", type(figure), str(figure), places, grouping),
                        lambda: _installed().format_number(figure, places, grouping))


class LazyText:
    """A message translated each time it is read (`str()`, f-strings, joining), for labels defined at
    import, before any language is active. Compare and hash it as its English message."""

    __slots__ = ("message",)

    def __init__(self, message: str):
        self.message = message

    def __str__(self) -> str:
        return gettext(self.message)

    def __repr__(self) -> str:
        return f"LazyText({self.message!r})"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyText):
            return self.message == other.message
        if isinstance(other, str):
            return other in (self.message, str(self))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.message)

    def __add__(self, other: object) -> str:
        return str(self) + str(other)

    def __radd__(self, other: object) -> str:
        return str(other) + str(self)

    def __mod__(self, values: object) -> str:
        return str(self) % values

    def __len__(self) -> int:
        return len(str(self))

    def __getattr__(self, name: str) -> Any:
        # str's methods (lower, replace, startswith...) on the translated text; never the object's own
        # machinery (copying and pickling look attributes up before `message` is set).
        if name == "message" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(str(self), name)

    def __reduce__(self) -> tuple[type[LazyText], tuple[str]]:
        return (LazyText, (self.message,))


def gettext_lazy(message: str) -> LazyText:
    return LazyText(message)


class TranslatedWords(Mapping[str, str]):
    """A table of words fixed at import, read in the active language: the keys stay as they are
    (codes), the values are translated on every read."""

    def __init__(self, words: Mapping[str, str], context: str | None = None):
        self._words = dict(words)
        self._context = context

    def __getitem__(self, key: str) -> str:
        message = self._words[key]
        return pgettext(self._context, message) if self._context else gettext(message)

    def __iter__(self) -> Iterator[str]:
        return iter(self._words)

    def __len__(self) -> int:
        return len(self._words)

    def english(self, key: str) -> str:
        return self._words[key]
