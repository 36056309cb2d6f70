"""hostnet.inputfiles: input files read size-limited and UTF-8, YAML without duplicate keys, alias
bombs or deep nesting; and, as a property, any YAML given to the two schemas' readers (sweep
specs, testbed.yaml) is either accepted or refused in lines that each name the file (issue 33)."""
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from hostnet import inputfiles
from hostnet.inputfiles import InputFileError
from hostnet.measure.sweep import SweepError, SweepSpec
from hostnet.testbed import servers


def load_text(tmp_path, text: str, name="in.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return inputfiles.load(path)


def test_plain_documents_and_merge_keys_load_as_yaml_says(tmp_path):
    assert load_text(tmp_path, "a: 1\nb: [x, {c: 2}]\n") == {"a": 1, "b": ["x", {"c": 2}]}
    assert load_text(tmp_path, "") is None
    # a key a merge brought in may be overridden: that is YAML's meaning, not a duplicate
    merged = load_text(tmp_path, "base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  x: 3\n")
    assert merged["d"] == {"x": 3, "y": 2}
    # a few aliases are fine; it is their expansion that is bounded
    assert load_text(tmp_path, "cpus: &c [0, 1]\nalso: *c\n") == {"cpus": [0, 1], "also": [0, 1]}


@pytest.mark.parametrize("text, msg", [
    ("a: 1\na: 2\n", r"line 2: key 'a' appears twice in one mapping \(first on line 1\)"),
    ("{a: 1, a: 2}\n", r"line 1: key 'a' appears twice"),
    ("x:\n  y: 1\n  y: 1\n", r"line 3: key 'y' appears twice"),
    ("- &a [*a]\n", r"expands to more than 100,000 values"),  # an anchor inside itself
    ("[" * 40 + "]" * 40, r"line 1: nested deeper than 32 levels"),
    ("a: [1\n", r"not valid YAML \(while parsing a flow sequence in \".*in.yaml\", line 1"),
    ("? [1, 2]\n: x\n", r"not valid YAML \(while constructing a mapping .* found unhashable key"),
])
def test_what_is_refused_is_one_line_naming_the_file(tmp_path, text, msg):
    with pytest.raises(InputFileError, match=msg) as exc:
        load_text(tmp_path, text)
    assert str(exc.value).startswith(f"{tmp_path / 'in.yaml'}: ") and "\n" not in str(exc.value)


def test_an_alias_bomb_is_refused_before_it_is_expanded(tmp_path):
    levels = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, 9):
        prev, cur = chr(96 + i), chr(97 + i)
        levels.append(f"{cur}: &{cur} [{', '.join([f'*{prev}'] * 9)}]")
    with pytest.raises(InputFileError, match=r"expands to more than 100,000 values") as exc:
        load_text(tmp_path, "\n".join(levels) + "\n")  # 9**9 strings once expanded
    assert len(str(exc.value)) < 200


def test_files_that_are_too_large_not_regular_or_not_utf8(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (inputfiles.MAX_BYTES + 1))
    with pytest.raises(InputFileError, match=r"big.yaml: larger than 1024 KB"):
        inputfiles.load(big)
    with pytest.raises(InputFileError, match=r"^/dev/zero: not a regular file$"):
        inputfiles.read_text("/dev/zero")
    with pytest.raises(InputFileError, match=r"missing.yaml: cannot read \(No such file or directory\)"):
        inputfiles.load(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"a: 1\nb: \xff\n")
    with pytest.raises(InputFileError, match=r"bad.yaml: line 2: not UTF-8 text \(byte 0xff\)"):
        inputfiles.load(bad)


def test_expanded_size_counts_shared_nodes_once_per_use():
    node = yaml.compose("a: &x [1, 2]\nb: *x\nc: *x\n")
    assert inputfiles.expanded_size(node) == 1 + 3 + 3 * 3  # the mapping, its 3 keys, 3 times [1, 2]


def test_one_line():
    assert inputfiles.one_line("a\n  b\tc") == "a b c"
    assert inputfiles.one_line("x" * 500, 10) == "x" * 9 + "…"


# -- the property: either accepted, or refused in lines that each name the file ------------------
KEYS = st.sampled_from(["experiment", "configs", "grid", "repetitions", "duration", "warmup", "label", "seed",
                        "hosts", "roles", "ssh", "name", "senders", "receivers", "address", "cpus", "flows",
                        "rx_buffer_kb", "app_cpus", "insecure_accept_unknown_keys", "<<"]) | st.text(max_size=8)
SCALARS = (st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True)
           | st.text(max_size=12) | st.sampled_from(["tsogro", "all-opts", "incast", "lab\n", "0-1", "*x"]))
DOCS = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=5),
                    max_leaves=25)
# hand-written damage next to well-formed documents: truncation, stray indentation, anchors, tabs
RAW = st.text(alphabet=st.sampled_from(list("ab:- \n\t[]{}&*!|>'\"#%@`,?<") + ["\x00", "\u00e9"]), max_size=80)


def _readers():
    return ((SweepSpec.from_yaml, SweepError), (servers.load, servers.TestbedFileError))


def _check(text: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "input.yaml"
        path.write_text(text, errors="surrogateescape")
        for read, refusal in _readers():
            try:
                read(path)
            except refusal as exc:
                lines = str(exc).split("\n")
                assert all(line.startswith(f"{path}: ") and len(line) < 1000 for line in lines), str(exc)[:300]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCS)
def test_any_yaml_document_is_accepted_or_refused_naming_the_file(doc):
    _check(yaml.safe_dump(doc, allow_unicode=True))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(RAW)
def test_any_text_is_accepted_or_refused_naming_the_file(text):
    _check(text)
