__version__ = "0.1.0"


def load(campaign=None, section=None, runs_dir=None):
    """The recorded runs as one tidy pandas frame, each point's parameters and each run's quality as
    columns (hostnet.analysis.dataset.load; docs/api.md). Imported by name when called: `import
    hostnet` stays instant for the CLI, and the package root, which the shared ground imports for
    __version__, names no floor above it."""
    import importlib
    return importlib.import_module(".analysis.dataset", __name__).load(campaign=campaign, section=section,
                                                                       runs_dir=runs_dir)
