"""The query form's fields are copied one level deep per form (`query._FieldsCopiedShallow`): each form
reads numbers in its own language, and neither changes the declared fields. Touches no database."""
from decimal import Decimal

from nodelodge.recommendations.query import WorkloadQueryForm
from nodelodge.recommendations.typed_numbers import TypedDecimalField

ASKED = {"workload": "notebook", "memory_gib": "24,5"}


def test_two_forms_read_numbers_each_in_its_own_language_and_leave_the_declared_fields_alone():
    german = WorkloadQueryForm(dict(ASKED), number_language="de")
    plain = WorkloadQueryForm(dict(ASKED))
    assert german.is_valid(), german.errors
    assert german.cleaned_data["memory_gib"] == Decimal("24.5")
    # The same text is not a number where decimals are written with a dot.
    assert not plain.is_valid()
    assert "memory_gib" in plain.errors
    declared = WorkloadQueryForm.base_fields["memory_gib"]
    assert isinstance(declared, TypedDecimalField)
    assert declared.language is None
    assert german.fields["memory_gib"] is not declared
    assert german.fields["memory_gib"].language == "de"
