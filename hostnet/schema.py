"""JSON Schema checks of hostnet's YAML inputs (testbed.yaml, sweep specs): every problem named by
its key, in words a user can act on.

A subschema's "description" says what a value must be ("a port number (1-65535)"); a value that
fails it is reported as "<key>: <value> is not <description>", the value shortened so a message stays
one line. bool is never a number and 3.0 is no integer. A pattern is anchored with \\Z, not $
(which also matches before a final newline: `name: "lab\\n"` passed `^[a-z0-9-]+$`).
"""
from __future__ import annotations

import reprlib

from jsonschema import Draft202012Validator, FormatChecker, validators

from . import inputfiles

# Only what JSON and YAML produce, so a checked value also survives json.dumps (point ids,
# manifests): numpy numbers are refused. Tuples count as lists (specs built in Python).
# An integer is an int: JSON Schema's "3.0 is an integer" let `repetitions: 3.0` through to a
# TypeError deep in a run.
_TYPES = Draft202012Validator.TYPE_CHECKER.redefine_many({
    "array": lambda _, v: isinstance(v, (list, tuple)),
    "integer": lambda _, v: isinstance(v, int) and not isinstance(v, bool),
})
Validator = validators.extend(Draft202012Validator, type_checker=_TYPES)


_REPR = reprlib.Repr()  # keyword arguments only from Python 3.12
_REPR.maxstring, _REPR.maxother, _REPR.maxlist, _REPR.maxdict, _REPR.maxlevel = 60, 60, 4, 4, 2


def key_of(path) -> str:
    """The key path as a user writes it; a key that is not one plain word is quoted ('\\n')."""
    return ".".join(str(p) if str(p).isprintable() and str(p).strip() == str(p) != "" else repr(p)
                    for p in path) or "(top level)"


def _message(err) -> str:
    path = list(err.absolute_path)
    if err.validator == "required":
        missing = [k for k in err.validator_value if k not in err.instance]
        return f"{key_of([*path, missing[0]])} is missing"
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        known = sorted(err.schema.get("properties", {}))
        extra = sorted(str(k) for k in err.instance if k not in known)
        return (f"{key_of([*path, extra[0]])} is not a known key" +
                (f" (known: {', '.join(known)})" if known else ""))
    description = err.schema.get("description") if isinstance(err.schema, dict) else None
    if description:
        return f"{key_of(path)}: {_REPR.repr(err.instance)} is not {description}"
    return f"{key_of(path)}: {inputfiles.one_line(err.message)}"


def problems(doc, schema: dict) -> list[str]:
    """Every way doc breaks schema, one line each, in key order (empty = valid)."""
    errors = Validator(schema, format_checker=FormatChecker()).iter_errors(doc)
    messages = (inputfiles.one_line(_message(e), limit=500)
                for e in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]))
    return list(dict.fromkeys(messages))
