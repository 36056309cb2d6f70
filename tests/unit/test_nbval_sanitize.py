"""The nbval sanitize file: a checkout's absolute path, wherever the clone is, never decides a
stored-output comparison; units and taxonomy names with a slash are left alone (a changed number
must still fail)."""
import configparser
import re
from pathlib import Path

CFG = Path(__file__).resolve().parents[2] / "notebooks" / "nbval-sanitize.cfg"


def _sanitize(text: str) -> str:
    cfg = configparser.ConfigParser()
    cfg.read(CFG)
    for section in cfg.sections():
        text = re.sub(cfg[section]["regex"], cfg[section]["replace"], text)
    return text


def test_a_checkout_anywhere_reads_the_same():
    # /check is where CI clones; /var/tmp the fresh-machine rehearsal's; /work a developer's
    for root in ("/check/abc123", "/var/tmp/hostnet-fresh.x", "/work/main", "/srv/lab/hostnet"):
        assert _sanitize(f"{root}/tests/fixtures/p.txt.gz: perf script") == "PATH perf script"


def test_units_taxonomy_names_and_numbers_are_left_alone():
    text = "12.5 Gbit/s/core, taxonomy linux-6/5, rule irqs-off-callchain/7, 3/4 runs, </div>"
    assert _sanitize(text) == text
