"""Benchmark 8 (bench/cli_start.py) on one real round: each command a process of its own."""


def test_cli_start_measures_each_command_as_a_process_from_a_subdirectory(monkeypatch):
    """One real round over two commands: the rows say what each printed last, and refusals exit 2."""
    from bench import cli_start
    monkeypatch.setattr(cli_start, "commands", lambda: [("--help",), ("sweep", "no-such-experiment")])
    rows = cli_start.measure(1, lambda msg: None)
    assert [r["command"] for r in rows] == ["--help", "sweep no-such-experiment"]
    assert rows[0]["rc"] == 0 and rows[1]["rc"] == 2 and "no declared sweep" in rows[1]["said"]
