from .i18n import TranslatedWords, gettext, gettext_noop

# The published figures a calculation may find missing, in words (English: the name with spaces).
VALUE_WORDS = TranslatedWords({
    "parameters": gettext_noop("parameters"),
    "layers": gettext_noop("layers"),
    "attention_heads": gettext_noop("attention heads"),
    "kv_heads": gettext_noop("kv heads"),
    "head_dim": gettext_noop("head dim"),
    "hidden_size": gettext_noop("hidden size"),
    "intermediate_size": gettext_noop("intermediate size"),
    "vocab_size": gettext_noop("vocab size"),
    "max_context": gettext_noop("max context"),
    "decoder_layers": gettext_noop("decoder layers"),
    "d_model": gettext_noop("d model"),
    "max_source_positions": gettext_noop("max source positions"),
    "max_target_positions": gettext_noop("max target positions"),
})


def value_words(name: str) -> str:
    return VALUE_WORDS[name] if name in VALUE_WORDS else name.replace("_", " ")


class SizingError(ValueError):
    """An input the calculators cannot size; `field` names the input at fault."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


class MissingModelValue(SizingError):
    """A figure the calculation needs is not published for this model (never treated as zero).
    `words` names the figure in the active language when it is not one of VALUE_WORDS."""

    def __init__(self, model_name: str, value_name: str, words: str | None = None):
        super().__init__(
            "model",
            gettext("%(model)s: the published configuration gives no %(value)s, so its memory cannot be "
                    "computed.")
            % {"model": model_name, "value": words or value_words(value_name)},
        )
        self.value_name = value_name
