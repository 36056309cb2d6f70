"""Host knobs: every change to host state goes through here and is journaled."""
from .arfs import NtupleRule
from .base import Knob, KnobError
from .ethtool import FEATURES, Offload, parse_features
from .journal import Journal, JournalBusy, restore_copies, restore_journal
from .link import LIMITS, GroMaxSize, LinkLimits, Mtu
from .loss import NftLoss
from .mounts import Mount
from .napi import NapiAffinity, NapiThreaded
from .nic import Channels, Coalesce, RingSize
from .platform import DdioWays, Iommu
from .qdisc import RootQdisc
from .steering import RpsCpus, RpsFlowCnt, cpu_mask
from .irq_xps import IrqAffinity, Irqbalance, XpsCpus, queue_irqs
from .sysctl import AllowedCongestionControl, CongestionControl, Sysctl
from .xdp import XdpProgram

KNOBS: dict[str, Knob] = {k.name: k for k in (
    *(Offload(flag) for flag in FEATURES), Mtu(), GroMaxSize(),
    *(LinkLimits(k) for k in LIMITS),
    RingSize("rx"), RingSize("tx"), *(Coalesce(f) for f in Coalesce.fields),
    Channels("rx"), Channels("tx"), Channels("combined"),
    RpsCpus(), RpsFlowCnt(), XpsCpus(), NtupleRule(), IrqAffinity(), Irqbalance(),
    Sysctl(), CongestionControl(), AllowedCongestionControl(), NftLoss(), DdioWays(), Iommu(), Mount(),
    NapiThreaded(), NapiAffinity(), XdpProgram(), RootQdisc(),
)}

__all__ = ["Knob", "KnobError", "Offload", "Mtu", "GroMaxSize", "LinkLimits", "RingSize", "Coalesce", "Channels",
           "RpsCpus", "RpsFlowCnt", "XpsCpus", "NtupleRule", "IrqAffinity", "Irqbalance", "Sysctl", "CongestionControl",
           "AllowedCongestionControl", "NftLoss",
           "DdioWays", "Iommu", "Mount", "NapiThreaded", "NapiAffinity", "XdpProgram", "RootQdisc",
           "Journal", "JournalBusy", "restore_copies", "restore_journal", "KNOBS", "cpu_mask", "parse_features",
           "queue_irqs"]
