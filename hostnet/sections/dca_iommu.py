"""§3.8-3.9 Fig. 12: DCA (Intel DDIO) off and the IOMMU on, each against the Default (DDIO on, IOMMU off).

The sweep is declared in sweeps/dca-iommu.yaml. DDIO is its grid key `ddio`, which each point's
config writes through the journaled `ddio_ways` knob where the host has it (Intel Xeon, bare metal,
msr-tools): "own-mask" is the host's own way mask (DDIO on), "lowest-way" one LLC way (hostnet does not
write the per-root-port bits that switch DDIO off entirely, so F15 is tested as "fewer DDIO ways").
The IOMMU is read-only (kernel command line + reboot): the comparison uses two campaigns recorded
on boots with it off and on, each one's capability record saying which. Where neither exists (the
embedded testbed: AMD VM, IOMMU off) run mode records the check and refuses. The notebook
10-dca-iommu.ipynb is a thin caller of these functions.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..testbed import record as capability_record
from . import common
from ..charts.hardware import dca_iommu_charts as charts  # noqa: F401 (the notebook's dca_iommu.charts)
from .. import store
from ..analysis import verdicts
from ..analysis.findings import dca_iommu as rules
from ..testbed.session import is_file, kind_of, using
from ..analysis.metrics import breakdown_metric
from ..hosts import LocalHost
from ..knobs import DdioWays, KnobError
from ..knobs.platform import LOWEST_WAY, OWN_MASK
from ..measure.sweep import SweepSpec, declared, paced, run_configs
from ..measure.sweep_spec import DDIO_HOST
from ..testbed.capabilities import MissingCapability

EXPERIMENT = "dca-iommu"  # the declaration's label: what the runs are stored under
# grid.ddio's points (sweeps/dca-iommu.yaml) as the tables, charts and verdicts name them
DDIO_SHOWN = {OWN_MASK: "ddio-on", LOWEST_WAY: "ddio-minimal", DDIO_HOST: "ddio-host"}
# the point of a host whose DDIO hostnet cannot set (AMD, a VM, the NIC rehearsal's guests): the
# host's own state, untouched, so the IOMMU's two-boot comparison still has its Default runs
DDIO_UNSET = DDIO_SHOWN[DDIO_HOST]


def reference(reference_dir) -> pd.DataFrame:
    return pd.read_csv(Path(reference_dir) / "dca_iommu_fig12.csv", comment="#")


def spec(*, config: str | None = None, ddio=None, rate_mbps: int = 0, **fields) -> SweepSpec:
    """sweeps/dca-iommu.yaml, with what is given over it (ddio: grid.ddio's points; rate_mbps: the
    flow paced, as the NIC rehearsal's guests need; fields: any other SweepSpec field)."""
    return declared(EXPERIMENT, config=config, grid={"ddio": ddio, "rate_mbps": paced(rate_mbps)}, **fields)


def ddio_plan(host) -> dict[str, str]:
    """The masks the declaration's points write: the host's own and its lowest way alone. Raises
    where DDIO is not settable, or reads 0x0 (already minimal or off: no Default point)."""
    ok, why = DdioWays().available(host)
    if not ok:
        raise MissingCapability(f"no DDIO: {why}")
    raw = DdioWays().read(host)
    try:
        return {DDIO_SHOWN[m]: DdioWays().resolve(host, "llc_ways", m, raw) for m in (OWN_MASK, LOWEST_WAY)}
    except KnobError as exc:
        raise MissingCapability(str(exc)) from None


def campaign_iommu(record: dict) -> str:
    """The IOMMU state a campaign's capability record holds for its hosts ("on", "off", ...; states
    joined by "/" where hosts differ, "unknown" where none was read)."""
    states = {caps["iommu"]["value"] for caps in record["capabilities"].values() if "iommu" in caps}
    return "/".join(sorted(states)) or "unknown"


def iommu_pair(records: dict[str, dict]) -> tuple[str, str]:
    """(campaign with the IOMMU off, campaign with it on) among recorded campaigns; raises when one is missing."""
    states = {c: campaign_iommu(r) for c, r in records.items()}
    off = [c for c, s in states.items() if s == "off"]
    on = [c for c, s in states.items() if s == "on"]
    if not (off and on):
        seen = ", ".join(f"{c}: IOMMU {s}" for c, s in states.items())
        raise MissingCapability(
            f"the IOMMU is read-only (kernel command line, e.g. intel_iommu=on, and a reboot) and the campaigns "
            f"given cover one state only ({seen}); record one campaign per boot and pass both")
    return off[0], on[0]


def run_live(testbed_file: str, *, runs_dir, campaign: str, **spec_args) -> tuple[dict[str, str], str]:
    """(the DDIO masks the points write, why DDIO was not varied or ""). On a testbed.yaml: the
    declaration's points (the receiver's own mask and its lowest way) where DDIO is settable, else
    one point at the host's own DDIO (grid.ddio [host]); the campaign's capability record says which
    boot (IOMMU off or on) it is, for a later two-boot comparison. The embedded testbed raises
    MissingCapability: it has no NIC. spec_args: spec()'s."""
    if not testbed_file:
        ddio_plan(LocalHost("embedded machine"))  # raises on a VM or an AMD host
        raise MissingCapability("the embedded testbed has no NIC: DMA into the LLC (DDIO) does not happen on veth")
    with using(testbed_file) as tb:
        host = tb.endpoints["receiver"].host
        settable, why = DdioWays().available(host)
        # a host that cannot set DDIO runs at its own state; one that can but reads a 0x0 mask is refused
        plan, unset = (ddio_plan(host), "") if settable else ({DDIO_UNSET: ""}, f"no DDIO: {why}")
        sweep = spec(**spec_args) if settable else spec(**{**spec_args, "ddio": [DDIO_HOST]})
        run_configs(tb, sweep, runs_dir=runs_dir, campaign=campaign)
    return plan, unset


def collect(mode: str, *, runs_dir, campaign: str = "", testbed: str = "embedded", **spec_args) -> tuple[str, str]:
    """(campaign, what was refused or left out), as numa.collect; spec_args: spec()'s."""
    if common.is_replay(mode, campaign):
        return campaign, ""
    # "embedded" (or an embedded testbed that is up): the one machine's check, which refuses
    testbed_file = testbed if is_file(testbed) else ""
    campaign = campaign or store.new_campaign_id(EXPERIMENT, kind_of(testbed))
    store.Campaign(runs_dir, campaign).write_capabilities(capability_record.detect(testbed_file))
    try:
        _, unset = run_live(testbed_file, runs_dir=runs_dir, campaign=campaign, **spec_args)
    except MissingCapability as exc:
        return campaign, f"refused: {exc}"
    return campaign, (f"DDIO not varied ({unset}): one point at the host's own DDIO, for the IOMMU's two-boot "
                      f"comparison" if unset else "")


def load(runs_dir, campaigns: list[str]) -> tuple[pd.DataFrame, list[dict], dict[str, dict]]:
    """Tidy runs of the campaigns (columns ddio = ddio-on/ddio-minimal/ddio-host from each run's
    point, iommu = off/on from its campaign's capability record), manifests, records."""
    frames, manifests, records = [], store.Manifests(), {}
    for campaign in campaigns:
        records[campaign] = store.Campaign(runs_dir, campaign).capabilities()
        if store.load_manifests(runs_dir, campaign, EXPERIMENT):
            tidy, ms = common.load(runs_dir, campaign, EXPERIMENT)
            ddio = {m["run_id"]: DDIO_SHOWN[m["point"]["ddio"]] for m in ms}
            frames.append(tidy.assign(ddio=tidy.run_id.map(ddio), iommu=campaign_iommu(records[campaign])))
            manifests += ms
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()), manifests, records


def status_table(records: dict[str, dict], reference_dir) -> pd.DataFrame:
    """What Fig. 12 varies, on the paper's servers and on each recorded host."""
    paper = pd.read_csv(Path(reference_dir) / "paper_testbed.csv", comment="#").set_index("property")
    rows = [{"testbed": "paper (Xeon Gold 6128)", "ddio": f"{paper.loc['ddio', 'value']} (settable)",
             "iommu": f"{paper.loc['iommu', 'value']} (enabled for Fig. 12)"}]
    for rec in records.values():
        for host, caps in rec["capabilities"].items():
            ddio = caps.get("ddio", {})
            rows.append({"testbed": f"{rec['testbed'].split(' (')[0]}: {host}",
                         "ddio": "settable" if ddio.get("ok") else f"not settable ({ddio.get('detail', '?')})",
                         "iommu": f"{caps.get('iommu', {}).get('value', '?')} (read-only)"})
    return pd.DataFrame(rows)


def measured_table(tidy: pd.DataFrame) -> pd.DataFrame:
    if tidy.empty:
        return pd.DataFrame(columns=["ddio", "iommu", "tpc_gbps", "sender_mm_pct", "receiver_mm_pct", "runs"])
    metric = breakdown_metric(tidy)
    rows = []
    for (ddio, iommu), g in tidy.groupby(["ddio", "iommu"]):
        tpc = g[(g.metric == "tpc_gbps") & (g.side == "both")].value
        mm = {side: g[(g.metric == metric) & (g.side == side) & (g.category == "mm")].value.median()
              for side in ("sender", "receiver")}
        rows.append({"ddio": ddio, "iommu": iommu, "tpc_gbps": tpc.median(), "sender_mm_pct": mm["sender"],
                     "receiver_mm_pct": mm["receiver"], "runs": len(tpc)})
    return pd.DataFrame(rows)


def _no_default_pair(records: dict[str, dict], tidy: pd.DataFrame) -> str:
    """Why F16 has no Default point with the IOMMU off and on: a boot missing, or no DDIO state both share."""
    try:
        iommu_pair(records)
    except MissingCapability as exc:
        return str(exc)
    seen = ", ".join(f"{d} with the IOMMU {i}" for d, i in sorted(rules.points(tidy)))
    return ("both IOMMU states recorded, but not at one DDIO state" + (f" ({seen})" if seen else "")
            + ": the Default point needs DDIO at its own mask (ddio-on) or the host's (ddio-host) on both boots")


@verdicts.under_accountings
def verdict_table(records: dict[str, dict], tidy: pd.DataFrame, reference_dir) -> verdicts.Verdicts:
    """F15, F16 and F27 on the clean runs of each (DDIO, IOMMU) point, each by its rule in
    analysis/findings; the Default point is DDIO at its own mask, or where it cannot be set, the host's."""
    no_ddio = rules.ddio_reasons(records)
    judged = {"F15": rules.f15(tidy, no_ddio), "F16": rules.f16(tidy, ("ddio-on", DDIO_UNSET),
                                                                _no_default_pair(records, tidy)),
              "F27": rules.f27(tidy, no_ddio)}
    return verdicts.collect(verdicts.load_findings(reference_dir), judged)
