"""pytest on the notebooks (nbval), wherever pytest runs from: by default every cell's output is
compared with its stored output (`pytest --nbval`, strict; a cell marked `# NBVAL_IGNORE_OUTPUT`,
such as 00-explore's widgets, only has to run); `--nbval-lax` compares only the cells marked
`# NBVAL_CHECK_OUTPUT`, the tables that carry the findings. Both execute every cell, so strict
costs no time. Stored and fresh outputs are sanitized with nbval-sanitize.cfg beside this file
unless --nbval-sanitize-with names another."""
from pathlib import Path

collect_ignore = ["executed"]  # hostnet figures' executed copies


def pytest_configure(config):
    opt = config.option
    if not (opt.nbval or opt.nbval_lax):
        opt.nbval = True
    if not opt.nbval_sanitize_with:
        opt.nbval_sanitize_with = str(Path(__file__).with_name("nbval-sanitize.cfg"))
