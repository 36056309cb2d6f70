"""Reading hostnet's input files (testbed.yaml, sweep specs, notebook sweep files, ssh_config) so
that a damaged or hostile file ends in one line naming it, before it can take memory, time or a
key's meaning: read_text for any of them, load for the YAML ones.

PyYAML's SafeLoader builds no objects beyond plain data, but on its own it lets a second key of the
same name silently win, expands an alias bomb into millions of nodes, recurses until Python stops
on deep nesting, reads /dev/zero until memory runs out and reports a decode error without the
file. The loader below refuses each of those with the limits named here; what it returns is then
checked against the input's JSON Schema (schema.py).
"""
from __future__ import annotations

import io
import os
import stat
from pathlib import Path

import yaml

MAX_BYTES = 1 << 20  # a testbed.yaml or sweep spec is a few KB; a MB is already no hand-written file
MAX_DEPTH = 32  # nesting of mappings and lists (the schemas need 5)
MAX_NODES = 100_000  # scalars, mappings and lists after aliases are expanded (an alias bomb's measure)
MAX_LINE = 300  # characters of a problem's message kept on its one line


class InputFileError(ValueError):
    """An input file that cannot be read as hostnet reads it: one line, naming the file."""


def one_line(text: str, limit: int = MAX_LINE) -> str:
    """text on one line, cut to limit characters (a message must not carry the file back)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


class _Loader(yaml.SafeLoader):
    """SafeLoader with a depth limit while composing, an expanded-size limit after it, and
    duplicate keys refused while constructing."""

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            return super().compose_node(parent, index)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise InputFileError(f"line {mark.line + 1}: nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_node(self):
        node = super().get_single_node()
        if node is not None and expanded_size(node) > MAX_NODES:
            raise InputFileError(f"expands to more than {MAX_NODES:,} values (aliases repeated inside "
                                f"aliases?)")
        return node

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            # the mapping's own keys, before merge keys (<<) bring theirs in: those may be overridden
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key, line = self.construct_object(key_node, deep=True), key_node.start_mark.line + 1
                try:
                    if key in seen:
                        raise InputFileError(f"line {line}: key {one_line(repr(key), 60)} appears twice in one "
                                            f"mapping (first on line {seen[key]}); which one should count?")
                    seen[key] = line
                except TypeError:
                    continue  # an unhashable key: SafeLoader's construct_mapping says so
        return super().construct_mapping(node, deep=deep)


def expanded_size(node) -> int:
    """How many nodes node stands for once every alias is expanded (computed once per node: an
    alias shares its anchor's node object, so this stays linear in the file's size)."""
    memo: dict[int, int] = {}

    def size(n) -> int:
        if id(n) in memo:
            return memo[id(n)]
        memo[id(n)] = MAX_NODES + 1  # a cycle (an anchor inside itself) counts as too large
        if isinstance(n, yaml.MappingNode):
            total = 1 + sum(size(k) + size(v) for k, v in n.value)
        elif isinstance(n, yaml.SequenceNode):
            total = 1 + sum(size(v) for v in n.value)
        else:
            total = 1
        memo[id(n)] = min(total, MAX_NODES + 1)
        return memo[id(n)]
    return size(node)


def read_text(path: str | os.PathLike) -> str:
    """A regular file of at most MAX_BYTES, decoded as UTF-8; InputFileError otherwise."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise InputFileError(f"{path}: not a regular file")
            raw = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise InputFileError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    if len(raw) > MAX_BYTES:
        raise InputFileError(f"{path}: larger than {MAX_BYTES // 1024} KB; hostnet reads no input that large")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise InputFileError(f"{path}: line {line}: not UTF-8 text (byte {raw[exc.start]:#04x})") from None


def load(path: str | os.PathLike):
    """The one YAML document in path, as plain data (None when empty); InputFileError, one line
    naming the file, for anything that is not a small, well-formed document with unique keys."""
    text = read_text(path)
    stream = io.StringIO(text)
    stream.name = str(path)  # what PyYAML's marks name instead of "<file>"
    loader = None
    try:
        loader = _Loader(stream)  # it reads the first characters already (and may refuse them)
        return loader.get_single_data()
    except InputFileError as exc:
        raise InputFileError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise InputFileError(f"{path}: not valid YAML ({one_line(str(exc))})") from None
    except RecursionError:  # belt and braces: MAX_DEPTH stops composing long before this
        raise InputFileError(f"{path}: nested too deeply") from None
    finally:
        if loader is not None:
            loader.dispose()
