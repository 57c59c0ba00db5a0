class SizingError(ValueError):
    """An input the calculators cannot size; `field` names the input at fault."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


class MissingModelValue(SizingError):
    """A figure the calculation needs is not published for this model (never treated as zero)."""

    def __init__(self, model_name: str, value_name: str):
        super().__init__(
            "model",
            f"{model_name}: the published configuration gives no {value_name.replace('_', ' ')}, "
            "so its memory cannot be computed.",
        )
        self.value_name = value_name
