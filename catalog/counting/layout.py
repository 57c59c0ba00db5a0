"""Lays a generated statement out on lines, so the installed SQL reads as written by hand: a new line
before each clause of a query (FROM, WHERE, GROUP BY, ...), after each statement's semicolon, and
around each CASE item of a select list, indented by the subqueries open. Only spaces between words
become line breaks: what the statement says is unchanged, quoted text included. A list that runs
past WIDTH wraps after a comma."""
from __future__ import annotations

import re

CLAUSES = ("FROM", "WHERE", "GROUP BY", "HAVING", "ORDER BY", "UNION ALL", "CROSS JOIN", "JOIN", "WINDOW",
           "INSERT INTO")
# A clause keyword right after one of these words belongs to it (DELETE FROM, CROSS JOIN, ...).
JOINED_TO = {"DELETE", "CROSS", "LEFT", "UNION", "DISTINCT", "IS"}
STEP = "    "
WIDTH = 100


def layout(sql: str, indent: str = "") -> str:
    out: list[str] = []
    parens: list[bool] = []  # per open parenthesis: does it hold a query?
    index = 0
    column = len(indent)
    while index < len(sql):
        char = sql[index]
        if char == "'":
            end = index + 1
            while True:
                end = sql.index("'", end) + 1
                if not sql.startswith("'", end):
                    break
                end += 1
            out.append(sql[index:end])
            column += end - index
            index = end
            continue
        if char == "(":
            parens.append(sql[index + 1:].lstrip().startswith(("SELECT ", "WITH ")))
        elif char == ")":
            parens.pop()
        elif char == " " and (not parens or parens[-1]) and _breaks_here(sql, index, column):
            out.append("\n" + indent + STEP * sum(parens))
            column = len(out[-1]) - 1
            index += 1
            continue
        elif char == " " and parens and not parens[-1] and sql[index - 1] == "," and column > WIDTH:
            # a long list inside an expression (arguments, a column list) wraps one step further in
            out.append("\n" + indent + STEP * (sum(parens) + 1))
            column = len(out[-1]) - 1
            index += 1
            continue
        out.append(char)
        column += 1
        index += 1
    return "".join(out)


def _breaks_here(sql: str, index: int, column: int) -> bool:
    """Whether the space at `index` (at a query's own level, `column` along its line) becomes a line
    break."""
    before, after = sql[:index], sql[index + 1:]
    if before.endswith(";"):
        return True
    if before.endswith(","):
        return (
            column > WIDTH or after.startswith("CASE ") or re.search(r"\bEND AS \w+,$", before) is not None
        )
    previous = re.search(r"(\w+)$", before)
    if previous is not None and previous.group(1) in JOINED_TO:
        return False
    return any(after.startswith(clause + " ") for clause in CLAUSES)
