"""Host knobs: every change to host state goes through here and is journaled."""
from .base import Knob, KnobError
from .ethtool import Offload, parse_features
from .journal import Journal, restore_journal
from .link import Mtu
from .steering import RpsCpus, RpsFlowCnt, cpu_mask
from .sysctl import Sysctl

KNOBS: dict[str, Knob] = {k.name: k for k in (
    Offload("tso"), Offload("gso"), Offload("gro"), Offload("lro"), Mtu(), RpsCpus(), RpsFlowCnt(),
    Sysctl(),
)}

__all__ = ["Knob", "KnobError", "Offload", "Mtu", "RpsCpus", "RpsFlowCnt", "Sysctl", "Journal",
           "restore_journal", "KNOBS", "cpu_mask", "parse_features"]
