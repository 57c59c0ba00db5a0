"""The input checks every calculator shares: each refusal names the field at fault."""
from __future__ import annotations

from decimal import Decimal, InvalidOperation
from types import TracebackType
from typing import Literal, TypeVar

from ..architectures import PLAIN, activation_mlp_width
from ..errors import MissingModelValue, SizingError, value_words
from ..i18n import gettext
from ..kv_cache import check_kv_bits
from ..limits import MAX_CONTEXT, MAX_REQUESTS
from ..specs import PRECISIONS, LanguageModelSpec, SpeechModelSpec
from ..units import fmt_int
from ..weights import precision_choices


def check_precision(precision: object) -> int:
    if isinstance(precision, bool) or precision not in PRECISIONS:
        raise SizingError("precision", gettext("Precision must be 16-bit, 8-bit or 4-bit."))
    return int(precision)


def check_count(value: object, field: str, subject: str, maximum: int) -> int:
    """`subject` names the input as a sentence starts with it ("The context"), translated."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise SizingError(field, gettext("%(subject)s must be a whole number.") % {"subject": subject})
    if value < 1:
        raise SizingError(field, gettext("%(subject)s must be at least 1.") % {"subject": subject})
    if value > maximum:
        raise SizingError(
            field, gettext("%(subject)s may be at most %(maximum)s.") % {
                "subject": subject, "maximum": fmt_int(maximum)
            }
        )
    return value


def check_decimal(value: object, field: str, subject: str) -> Decimal:
    """A finite number as an exact Decimal; `subject` names the input ("The efficiency"), translated."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
        raise SizingError(field, gettext("%(subject)s must be a number.") % {"subject": subject})
    try:
        # str() of a float is its shortest repr, so 0.75 becomes exactly 0.75.
        number = Decimal(str(value)) if isinstance(value, float) else Decimal(value)
    except InvalidOperation:
        raise SizingError(field, gettext("%(subject)s must be a number.") % {"subject": subject}) from None
    if not number.is_finite():
        raise SizingError(field, gettext("%(subject)s must be a finite number.") % {"subject": subject})
    return number


def efficiency_error() -> str:
    return gettext("The efficiency must be more than 0 %% and at most 100 %%.") % {}


def model_value(model: LanguageModelSpec | SpeechModelSpec, name: str) -> int:
    """A published figure the formula needs; missing is an error, never zero."""
    value: object = getattr(model, name)
    if value is None:
        raise MissingModelValue(model.name, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SizingError(
            "model",
            gettext("%(model)s: the %(value)s must be a positive whole number.")
            % {"model": model.name, "value": value_words(name)},
        )
    return value


def check_context_limit(model: LanguageModelSpec, tokens: int, field: str) -> None:
    """Refuses a context beyond the longest the model is sized for (`longest_context`: with the YaRN
    scaling its card documents, where it does)."""
    longest = model.longest_context
    if longest is not None and tokens > longest:
        values = {"model": model.name, "maximum": fmt_int(longest), "tokens": fmt_int(tokens)}
        if field == "sequence_length":
            message = gettext(
                "%(model)s handles at most %(maximum)s tokens; the sequence length of %(tokens)s is above "
                "that limit."
            )
        else:
            message = gettext(
                "%(model)s handles at most %(maximum)s tokens; the context of %(tokens)s is above that limit."
            )
        raise SizingError(field, message % values)


_Value = TypeVar("_Value")


def require(value: _Value | None, field: str, message: str) -> _Value:
    """`value`, given; else a SizingError on `field`."""
    if value is None:
        raise SizingError(field, message)
    return value


class renamed:  # noqa: N801 (used as a statement: `with renamed(...)`)
    """Re-raise a SizingError under the caller's field name (the message stays as written)."""

    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping

    def __enter__(self) -> renamed:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> Literal[False]:
        if exc is not None and isinstance(exc, SizingError) and exc.field in self.mapping:
            exc.field = self.mapping[exc.field]
        return False


def check_inference_inputs(model: LanguageModelSpec, precision: object, context: object, requests: object,
                           kv_bits: object) -> tuple[int, int, int, int]:
    """The inputs of a language model served for inference, under transformers or vLLM: (precision,
    context, requests, KV-cache bits), checked, and the model values the estimates read."""
    precision = check_precision(precision)
    context = check_count(context, "context", gettext("The context"), MAX_CONTEXT)
    requests = check_count(requests, "requests", gettext("The number of concurrent requests"), MAX_REQUESTS)
    kv_bits = check_kv_bits(kv_bits)
    model_value(model, "parameters")
    model_value(model, "layers")
    if (model.architecture or PLAIN).mla is None:
        model_value(model, "kv_heads")
        model_value(model, "head_dim")
    model_value(model, "hidden_size")
    activation_mlp_width(model, model_value(model, "intermediate_size"))
    model_value(model, "vocab_size")
    refused = precision_choices(model)[precision]
    if refused:
        raise SizingError("precision", refused)
    check_context_limit(model, context, "context")
    return precision, context, requests, kv_bits
