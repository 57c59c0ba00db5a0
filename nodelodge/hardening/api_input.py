"""What the API's request bodies take: stated in the OpenAPI schema and checked exactly as stated.

A body is one JSON object with the fields its schema names and no others (`additionalProperties:
false`; a misspelt `auto_lanch` is refused, never quietly dropped), each of the type the schema
gives it: `true` or `false` for a boolean (not 0 or "yes"), a whole number for an integer (5 or
5.0, not "5" or 5.5), text for a string. Choices are enums, ranges `minimum` and `maximum`,
formats `pattern`s.
A body the schema does not allow is answered 400 naming each field (`machines.0.gpus`), in the
request's language; values it allows that the console still refuses are the operation's own
answers (422: a query it cannot answer, values that do not go together, a webhook address it will
not call; 409: the state refuses).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated

from django.utils.translation import gettext_lazy
from ninja import Schema
from pydantic import BeforeValidator, ConfigDict, Field, WrapValidator
from pydantic import ValidationError as PydanticValidationError
from pydantic_core import PydanticCustomError

from .errors import BODY_NOT_JSON_MESSAGE

REQUIRED_MESSAGE = gettext_lazy("This field is required.")
UNKNOWN_FIELD_MESSAGE = gettext_lazy(
    "The operation takes no such field; its fields are listed at /api/v1/docs."
)
SCHEMA_MESSAGE = gettext_lazy("This value is not what the schema states; see /api/v1/docs.")
CHOICES_MESSAGE = gettext_lazy("Choose one of: %(choices)s.")
# pydantic's error types, worded for the client (its own messages are English only).
TYPE_MESSAGES = {
    "missing": REQUIRED_MESSAGE,
    "extra_forbidden": UNKNOWN_FIELD_MESSAGE,
    "bool_type": gettext_lazy("Send true or false."),
    "int_type": gettext_lazy("Send a whole number."),
    "string_type": gettext_lazy("Send text (a JSON string)."),
    "dict_type": gettext_lazy("Send a JSON object."),
    "model_type": gettext_lazy("Send a JSON object."),
    "model_attributes_type": gettext_lazy("Send a JSON object."),
    "list_type": gettext_lazy("Send a JSON array."),
}
# Lengths: pydantic names the bound it missed.
LENGTH_MESSAGES = {
    "too_short": gettext_lazy("Send at least %(min_length)s items."),
    "too_long": gettext_lazy("Send at most %(max_length)s items."),
    "string_too_long": gettext_lazy("Send at most %(max_length)s characters."),
}
# Where ninja says the value came from, and the operation's own parameter names; neither is a field.
_LOCATIONS = {"body", "query", "path", "header", "cookie", "form", "file"}
_PARAMETERS = {"payload", "params"}
_NOT_AN_OBJECT = {"missing", "model_type", "dict_type", "model_attributes_type"}


class BodyIn(Schema):
    """A request body: its fields only, each strictly of its stated type."""

    model_config = ConfigDict(extra="forbid", strict=True)


def _whole(value):
    # JSON Schema counts 5.0 as an integer (it is the number 5), so it is taken as 5; 5.5, "5" and
    # true are not integers and are refused.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def whole_number(*, ge: int, le: int):
    """An integer from `ge` to `le`, as JSON Schema states one: 5 or 5.0, nothing else."""
    return Annotated[int, Field(ge=ge, le=le), BeforeValidator(_whole)]


def worded(message) -> WrapValidator:
    """The field's own message for any value its schema refuses, instead of the generic one for the
    kind of mistake: a lazy translation, or a function giving the text, read in the request's
    language."""

    def check(value, handler):
        try:
            return handler(value)
        except PydanticValidationError:
            text = message() if callable(message) else str(message)
            raise PydanticCustomError("worded", "{message}", {"message": text}) from None

    return WrapValidator(check)


def field_name(location: Iterable) -> str:
    """`("body", "payload", "machines", 0, "gpus")` → `machines.0.gpus`; the body itself is `body`."""
    parts = [str(part) for part in location]
    if parts and parts[0] in _LOCATIONS:
        kind = parts.pop(0)
        if parts and parts[0] in _PARAMETERS:
            parts.pop(0)
        if not parts:
            return "body" if kind == "body" else "request"
    return ".".join(parts) or "request"


def _message(error: dict) -> str:
    kind = error.get("type", "")
    if kind == "worded":
        return error["msg"]
    if kind == "literal_error":
        choices = re.findall(r"'([^']*)'", str(error.get("ctx", {}).get("expected", "")))
        if choices:
            return str(CHOICES_MESSAGE) % {"choices": ", ".join(choices)}
    if kind in TYPE_MESSAGES:
        return str(TYPE_MESSAGES[kind])
    if kind in LENGTH_MESSAGES:
        try:
            return str(LENGTH_MESSAGES[kind]) % error.get("ctx", {})
        except (KeyError, TypeError):
            pass
    return str(SCHEMA_MESSAGE)


def field_errors(errors: Iterable[dict]) -> dict[str, str]:
    """ninja's validation errors as the API writes errors: each field (the first mistake in it)
    with its message in words. A body that is missing or not an object is `body`."""
    worded_errors: dict[str, str] = {}
    for error in errors:
        name = field_name(error.get("loc", ()))
        if name == "body" and error.get("type") in _NOT_AN_OBJECT:
            message = str(BODY_NOT_JSON_MESSAGE)
        else:
            message = _message(error)
        worded_errors.setdefault(name, message)
    return worded_errors


# The wizard's parameters as text, as GET /api/v1/recommendations takes them.
WizardQuery = Annotated[dict[str, str], Field(
    description="The wizard's parameters as text (`{\"workload\": \"inference\", \"model\": "
    "\"llama-3-1-8b\", …}`), read by the rules of GET /api/v1/recommendations: a query the console "
    "cannot answer is 422 naming its field."
)]
