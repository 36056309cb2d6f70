"""Numbers the docs state that the code decides: checked, so the docs cannot drift (#31)."""
import re

from conftest import REPO
from hostnet.notebook import batch


def _profile_table() -> dict[str, dict]:
    text = (REPO / "docs" / "notebooks.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| (\d+) s \| (\d+) s \| (\d+) \|", text.split("## Profiles", 1)[1], re.M)
    return {name: {"duration": int(d), "warmup": int(w), "repetitions": int(r)} for name, d, w, r in rows}


def test_the_profile_table_in_docs_is_the_code_s():
    assert _profile_table() == batch.PROFILES


def test_the_cli_offers_every_profile_and_only_those():
    from hostnet import cli
    for command in ("figures", "sweep"):
        action = next(a for a in cli.parser()._subparsers._group_actions[0].choices[command]._actions
                      if a.dest == "profile")
        assert tuple(action.choices) == tuple(batch.PROFILES), command
