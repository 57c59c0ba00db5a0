"""Options shared by `estimate` and `recommend`: the wizard's query-string names, as flags."""
from __future__ import annotations

import sys
from typing import NoReturn

from django.http import QueryDict

from nodelodge.recommendations.parameters import PARAMETERS, PREFERENCE, TRAINING
from nodelodge.recommendations.query import QueryError, WorkloadQuery, parse_query

# The options are the declared inputs (`parameters.PARAMETERS`), as the query string names them.
QUERY_OPTIONS = tuple(p.name for p in PARAMETERS if p.cli and p.section != PREFERENCE)
PREFERENCE_OPTIONS = tuple(p.name for p in PARAMETERS if p.cli and p.section == PREFERENCE)


def add_query_arguments(parser, preferences: bool) -> None:
    # Every option left out takes the workload query's default (`DEFAULTS`), as on the page and the API.
    training = parser.add_argument_group("fine-tuning: how it is run (--workload finetune only)")
    for parameter in PARAMETERS:
        if not parameter.cli or (parameter.section == PREFERENCE and not preferences):
            continue
        parameter.add_option(training if parameter.section == TRAINING else parser)
    parser.add_argument("--json", action="store_true", help="print the API's JSON")


def options_to_query(options: dict, names) -> QueryDict:
    query = QueryDict(mutable=True)
    for name in names:
        value = options.get(name)
        if value not in (None, ""):
            query[name] = str(value)
    return query


def query_from_options(command, options: dict, names) -> WorkloadQuery:
    """The workload query the options give, parsed as the page and the API parse theirs."""
    try:
        return parse_query(options_to_query(options, names))
    except QueryError as error:
        fail(command, error.errors)


def fail(command, errors: dict[str, str]) -> NoReturn:
    """Bad input: every error on stderr, exit status 2 (as argparse does)."""
    for field, message in errors.items():
        command.stderr.write(f"error: {field}: {message}")
    sys.exit(2)
