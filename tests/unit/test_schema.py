"""hostnet.schema: JSON Schema problems named by key, in the schema's own words."""
from hostnet.schema import key_of, problems

SCHEMA = {
    "type": "object", "required": ["name"], "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z]+$", "description": "a lower-case name"},
        "sizes": {"type": "array", "items": {"type": "integer", "minimum": 1}},
        "on": {"type": "boolean", "description": "true or false"},
    },
}


def test_a_valid_document_has_no_problems():
    assert problems({"name": "ok", "sizes": [1, 2], "on": False}, SCHEMA) == []
    assert problems({"name": "ok", "sizes": (1, 2)}, SCHEMA) == []  # a tuple is a list


def test_problems_name_the_key_in_key_order():
    assert problems({"sizes": [1, 0], "colour": 1, "on": "false"}, SCHEMA) == [
        "name is missing",
        "colour is not a known key (known: name, on, sizes)",
        "on: 'false' is not true or false",
        "sizes.1: 0 is less than the minimum of 1",  # no description: jsonschema's own words
    ]
    assert problems({"name": "Bad"}, SCHEMA) == ["name: 'Bad' is not a lower-case name"]
    assert problems(["name"], SCHEMA) == ["(top level): ['name'] is not of type 'object'"]
    assert problems({"name": "ok", "sizes": [True]}, SCHEMA) == ["sizes.0: True is not of type 'integer'"]


def test_key_of():
    assert key_of(["hosts", "alpha", "cpus", 0]) == "hosts.alpha.cpus.0" and key_of([]) == "(top level)"
