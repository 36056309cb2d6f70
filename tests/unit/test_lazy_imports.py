"""Imports inside functions in hostnet/: at most MAX of them, and each says why it is there.

Why the rule: a module's top is where a reader learns what it needs, and an import inside a function
hides that (and repeats: one handler, one helper, another). It is worth it only where importing at
the top would make someone pay for what they do not use: `hostnet --help`, each command's --help and
its refusals answer in a fraction of a second (benchmark 8, docs/performance.md) because a command's
parser never loads pandas, papermill, altair or paramiko, which its handler may; every command and
every notebook kernel import notebook/parameters.py and measure/options.py; a replay's worker
processes import notebook/batch.py. The other way to stay light is at a package's top: hostnet,
hosts (SshHost), store and testbed load their modules on first use (PEP 562 __getattr__), so the
modules below keep their imports at the top. What is still imported in a function says so on its
line or the line above: `# lazy: <what it costs, and who does without it>`; a new one without that
comment, or one more than MAX, fails here."""
from __future__ import annotations

import ast
import io
import tokenize

from conftest import REPO

MAX = 30  # 101 before the rule (2026-12); raise it only with a reason a reviewer accepts
MARK = "# lazy:"


def in_function_imports(source: str) -> list[ast.stmt]:
    """Every import statement inside a function's body (a nested function's counted once, with it)."""
    found = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))
    walk(ast.parse(source), False)
    return found


def has_reason(node: ast.stmt, source: str) -> bool:
    """A `# lazy:` comment with a few words after it on one of the import's lines, or alone on the
    line directly above it."""
    comments = {tok.start[0]: tok.string for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                if tok.type == tokenize.COMMENT}
    lines = source.splitlines()
    above = node.lineno - 1
    candidates = [comments.get(n, "") for n in range(node.lineno, node.end_lineno + 1)]
    if above >= 1 and lines[above - 1].lstrip().startswith("#"):
        candidates.append(comments.get(above, ""))
    return any(c.startswith(MARK) and len(c[len(MARK):].split()) >= 3 for c in candidates)


def unexplained(source: str) -> list[ast.stmt]:
    return [node for node in in_function_imports(source) if not has_reason(node, source)]


def test_in_function_imports_are_few_and_each_says_why_it_is_lazy():
    found, missing = [], []
    for path in sorted((REPO / "hostnet").rglob("*.py")):
        source = path.read_text()
        where = path.relative_to(REPO)
        found += [f"{where}:{node.lineno}" for node in in_function_imports(source)]
        missing += [f"{where}:{node.lineno}: {ast.get_source_segment(source, node)}" for node in unexplained(source)]
    assert not missing, (f"in-function imports without a `{MARK} <why>` comment on their line or the line above "
                         f"(or import them at the module's top): " + "; ".join(missing))
    assert len(found) <= MAX, f"{len(found)} in-function imports, at most {MAX}: " + ", ".join(found)


def test_the_walk_counts_a_nested_function_once_and_reads_the_reason_where_it_is_written():
    source = '''
import os


def outer():
    # lazy: pandas costs 0.8 s and only this needs it
    import pandas

    def inner():
        import json
        from a import (b,
                       c)  # lazy: a is heavy and rarely used
        # a comment that is not a reason
        import re  # lazy:
        return b, c, re, json
    return inner, pandas


class K:
    import math

    def method(self):
        # lazy: yaml loads slowly, for this method only
        # (and a second line)
        import yaml
        return yaml
'''
    nodes = in_function_imports(source)
    assert [n.lineno for n in nodes] == [7, 10, 11, 14, 25]  # os and the class body's math are at no function's top
    assert [n.lineno for n in unexplained(source)] == [10, 14, 25]  # no comment, an empty reason, not directly above
