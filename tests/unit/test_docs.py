"""Numbers the docs state that the code decides: checked, so the docs cannot drift (#31)."""
import csv
import re

import pytest

from conftest import REPO
from hostnet.measure.options import PROFILES


def _profile_table() -> dict[str, dict]:
    text = (REPO / "docs" / "notebooks.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| (\d+) s \| (\d+) s \| (\d+) \|", text.split("## Profiles", 1)[1], re.M)
    return {name: {"duration": int(d), "warmup": int(w), "repetitions": int(r)} for name, d, w, r in rows}


def test_the_profile_table_in_docs_is_the_code_s():
    assert _profile_table() == PROFILES


def test_the_cli_offers_every_profile_and_only_those():
    from hostnet import cli
    for command in ("figures", "sweep"):
        action = next(a for a in cli.parser()._subparsers._group_actions[0].choices[command]._actions
                      if a.dest == "profile")
        assert tuple(action.choices) == tuple(PROFILES), command


# The files a new user reads first; every command in their code blocks is checked.
FIRST_READ = ("README.md", "docs/install.md", "docs/notebooks.md")


def _commands(name: str) -> list[str]:
    """`hostnet …` and `make …` lines of a document's code blocks, comments cut."""
    text = (REPO / name).read_text()
    lines = [line.split("#", 1)[0].strip() for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
             for line in block.splitlines()]
    return [re.sub(r"^\.venv/bin/", "", line) for line in lines if re.match(r"(\.venv/bin/)?(hostnet|make)\b", line)]


def _argv(line: str) -> list[str]:
    """A documented command as one argv: optional parts kept, the first of `a|b`, placeholders
    (CAMPAIGN, RUN, FILE...) given a value."""
    words = line.replace("[", " ").replace("]", " ").split()[1:]
    return [w.split("|")[0] if "|" in w else ("x" if w.isupper() and w.replace("_", "").isalpha() else w)
            for w in words]


def test_every_command_the_first_read_docs_show_is_accepted_as_shown():
    from hostnet import cli
    makefile = (REPO / "Makefile").read_text()
    targets = set(re.findall(r"^([\w-]+):", makefile, re.M))
    shown = {name: _commands(name) for name in FIRST_READ}
    assert sum(map(len, shown.values())) > 20
    for name, lines in shown.items():
        for line in lines:
            if line.startswith("make"):
                assert set(line.split()[1:]) <= targets, (name, line)
                continue
            try:
                cli.parser().parse_args(_argv(line))
            except SystemExit:
                pytest.fail(f"{name}: `{line}` is refused by the CLI as {_argv(line)}")


def _numbered_notebooks() -> list[str]:
    return sorted(p.name for p in (REPO / "notebooks").glob("[0-9][0-9]-*.ipynb"))


def test_the_notebook_table_and_the_readme_name_every_notebook():
    names = _numbered_notebooks()
    section = (REPO / "docs" / "notebooks.md").read_text().split("## The notebooks")[1].split("\n## ")[0]
    table = re.findall(r"`(\d\d-[\w-]+\.ipynb)`", section)
    assert sorted(set(table)) == names
    readme = (REPO / "README.md").read_text()
    listing = re.search(r"`00-explore.ipynb` browses.*?\n\n", readme, re.S).group(0)
    numbers = set()
    for first, last in re.findall(r"`(\d\d)`–`(\d\d)`", listing):
        numbers |= {f"{n:02d}" for n in range(int(first), int(last) + 1)}
    numbers |= set(re.findall(r"`(\d\d)`", listing)) | {"00"}
    assert numbers == {n[:2] for n in names}, listing


def test_counts_of_notebooks_and_the_finding_range_are_todays():
    """Statements of how many notebooks there are and which findings the report covers, in the docs
    that describe the present (a dated measurement, "on 2026-11-25: 14 notebooks", stays as it was)."""
    sections = len(_numbered_notebooks()) - 1  # 00-explore is not a section
    with open(REPO / "hostnet" / "reference" / "findings.csv", newline="") as f:
        last = max(row["id"] for row in csv.DictReader(f))
    for name in FIRST_READ:
        for line in (REPO / name).read_text().splitlines():
            if re.search(r"20\d\d-\d\d-\d\d|bench/results", line):
                continue
            for n in re.findall(r"\b(\d+) (?:section )?notebooks\b", line):
                assert int(n) in (sections, sections + 1), (name, line)
            for upto in re.findall(r"\bF01[–-](F\d\d)\b", line):
                assert upto == last, (name, line)
