"""JSON Schema checks of hostnet's YAML inputs (testbed.yaml, sweep specs): every problem named by
its key, in words a user can act on.

A subschema's "description" says what a value must be ("a port number (1-65535)"); a value that
fails it is reported as "<key>: <value> is not <description>". bool is never a number.
"""
from __future__ import annotations

from jsonschema import Draft202012Validator, FormatChecker, validators

# Only what JSON and YAML produce, so a checked value also survives json.dumps (point ids,
# manifests): numpy numbers are refused. Tuples count as lists (specs built in Python).
_TYPES = Draft202012Validator.TYPE_CHECKER.redefine_many({
    "array": lambda _, v: isinstance(v, (list, tuple)),
})
Validator = validators.extend(Draft202012Validator, type_checker=_TYPES)


def key_of(path) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


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
        return f"{key_of(path)}: {err.instance!r} is not {description}"
    return f"{key_of(path)}: {err.message}"


def problems(doc, schema: dict) -> list[str]:
    """Every way doc breaks schema, one line each, in key order (empty = valid)."""
    errors = Validator(schema, format_checker=FormatChecker()).iter_errors(doc)
    return list(dict.fromkeys(_message(e) for e in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path])))
