"""Where and how a live run runs: the testbed (a notebook's `testbed` parameter, a command's
--testbed), the receive steering of a fresh embedded testbed, how much a top-up may add, and the
profiles (how long each point measures) of a notebook run live.

The environment is read at the edges only: the CLI (main) and a notebook's start(), which is where a
kernel that `hostnet figures` or a notebook sweep started picks up what the command was given. From
there a LiveOptions is passed down explicitly; nothing below reads the environment for these."""
from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:  # the rest is imported where used: every command and a notebook kernel import this module
    from .topup import TopUpLog
    from ..testbed import Testbed

# What a live section's top-up spends at most after its sweep (`hostnet top-up` takes its own).
BUDGET_RUNS = 30
BUDGET_MINUTES = 10.0

# Measurement profiles for a notebook's mode="run" (`hostnet figures --profile`, a notebook sweep's
# profile; notebook/batch.py passes them as its parameters; here, where the CLI's parser reads
# them without loading papermill). quick: what `make reproduce` runs on 2 cores in about an hour
# with top-ups. It starts at 3 repetitions, not 2: a t-interval at n = 2 is ±12.7 standard errors,
# so every compared point would need a top-up anyway (the committed campaigns used 5 s points and 5
# repetitions). paper: the paper's 20 s points, 5 repetitions. smoke: the shortest run that
# exercises a notebook end to end (the live tests); its verdicts are not expected to decide.
PROFILES = {
    "quick": {"duration": 3, "warmup": 1, "repetitions": 3},
    "paper": {"duration": 20, "warmup": 5, "repetitions": 5},
    "smoke": {"duration": 2, "warmup": 1, "repetitions": 2},
}
QUICK = PROFILES["quick"]
SMOKE = PROFILES["smoke"]

# The variables a command hands to the notebook kernels it starts (and a user may set by hand).
ENV = {"steering": "HOSTNET_RX_STEERING", "top_up_runs": "HOSTNET_TOP_UP_RUNS",
       "top_up_minutes": "HOSTNET_TOP_UP_MINUTES"}


@dataclass(frozen=True)
class LiveOptions:
    """testbed: "embedded" (a fresh one, torn down after), the name of one that is up, or a
    testbed.yaml (testbed/session.py). steering: how a fresh embedded testbed receives
    (testbed/steering.py; one that is up, or servers, keep their own). top_up_runs / top_up_minutes:
    the budget a live section's top-up may spend until its verdicts are decided (docs/verdicts.md;
    the test suite sets 0 runs)."""
    testbed: str = "embedded"
    steering: str = ""  # "": the default (steering.DEFAULT)
    top_up_runs: int = BUDGET_RUNS
    top_up_minutes: float = BUDGET_MINUTES

    def __post_init__(self):
        if self.steering:
            # lazy: testbed.steering loads the knobs and hosts (0.1 s), for a named steering only
            from ..testbed import steering
            steering.check(self.steering)
        if self.top_up_runs < 0 or self.top_up_minutes < 0:
            raise ValueError(f"a top-up budget is not negative: {self.top_up_runs} runs, "
                             f"{self.top_up_minutes:g} minutes")

    @classmethod
    def from_environment(cls, environ: Mapping[str, str], *, testbed: str = "embedded", **given) -> LiveOptions:
        """The environment's values (ENV), with `given` (a command's options; None = not given) over them."""
        values: dict = {"testbed": testbed or "embedded"}
        for field_name, var in ENV.items():
            if given.get(field_name) is not None:
                values[field_name] = given[field_name]
            elif environ.get(var):
                values[field_name] = environ[var]
        try:
            if "top_up_runs" in values:
                values["top_up_runs"] = int(values["top_up_runs"])
            if "top_up_minutes" in values:
                values["top_up_minutes"] = float(values["top_up_minutes"])
        except ValueError as exc:
            raise ValueError(f"${ENV['top_up_runs']} / ${ENV['top_up_minutes']}: {exc}") from exc
        return cls(**values)

    def testbed_for(self, prefix: str = "nb", **shape) -> AbstractContextManager[Testbed]:
        """The testbed for a with-block (testbed.session.using); shape and the steering shape a fresh
        embedded one only."""
        # lazy: the session loads the embedded testbed, the servers' schema checks and SSH (0.6 s)
        from ..testbed.session import using
        return using(self.testbed, prefix=prefix, steering=self.steering or None, **shape)

    def top_up(self, tb: Testbed, judge, *, runs_dir, campaign: str, reference_dir) -> TopUpLog:
        """topup.decide within this budget."""
        # lazy: the top-up loop is the measuring floor (runner, probes: 1 s); a notebook's replay never gets here
        from . import topup
        return topup.decide(tb, judge, runs_dir=runs_dir, campaign=campaign, reference_dir=reference_dir,
                            budget_runs=self.top_up_runs, budget_minutes=self.top_up_minutes)

    def environment(self) -> dict[str, str]:
        """The variables that hand these options to a notebook kernel a command starts."""
        return {var: str(value) for field_name, var in ENV.items() if (value := getattr(self, field_name)) != ""}
