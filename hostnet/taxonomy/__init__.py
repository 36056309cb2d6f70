"""Kernel symbol -> CPU category, from versioned regex data per kernel series."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

CATEGORIES = ("data_copy", "tcp/ip", "netdev", "skb", "mm", "lock", "sched", "etc")  # the paper's layers
# Time the testbed and the instrument cost, not the stack: the profiler's own code, and (by the
# attribution rule) IPI sends, their VM exits and non-network interrupt entry on the embedded
# testbed, and its loss injector. Drawn apart, never a candidate for "the largest layer".
TESTBED = "testbed"
IDLE, UNCLASSIFIED, USER = "idle", "unclassified", "user"
_SUFFIX = re.compile(r"(\.(isra|part|constprop|cold|lto_priv|llvm)(\.\d+)?)+$")


def strip_suffix(symbol: str) -> str:
    """'tcp_foo.isra.0' -> 'tcp_foo': compiler clones are the same function."""
    # every suffix starts with a dot, and most symbols have none: the attribution asks for every
    # frame of every sample, and the substitution was a fifth of a breakdown
    return _SUFFIX.sub("", symbol) if "." in symbol else symbol


@dataclass(frozen=True)
class Taxonomy:
    version: str
    rules: tuple[tuple[re.Pattern, str], ...]
    # symbol -> category: call-chain attribution classifies every frame of every sample
    _memo: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def classify(self, symbol: str, kernel: bool = True) -> str:
        """Category of one sampled symbol. User-space samples are "user" (the application)."""
        if not kernel:
            return USER
        cat = self._memo.get(symbol)
        if cat is None:
            cat = self._memo[symbol] = self._match(strip_suffix(symbol))
        return cat

    def _match(self, name: str) -> str:
        for pattern, category in self.rules:
            if pattern.match(name):
                return category
        return UNCLASSIFIED


def parse_taxonomy(text: str, source: str = "taxonomy", include=None) -> Taxonomy:
    """Rules in file order; `# include: NAME` appends another file's rules (via `include`)."""
    version, rules = "unversioned", []
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# version:"):
            version = line.split(":", 1)[1].strip()
        if line.startswith("# include:"):
            if include is None:
                raise ValueError(f"{source}:{n}: include without a loader")
            rules.extend(include(line.split(":", 1)[1].strip()).rules)
            continue
        if not line.strip() or line.startswith("#") or line.startswith("pattern\t"):
            continue
        parts = line.split("\t")
        if len(parts) < 2 or parts[1] not in CATEGORIES + (TESTBED, IDLE):
            raise ValueError(f"{source}:{n}: expected 'regex<TAB>category<TAB>why', category in "
                             f"{CATEGORIES + (TESTBED, IDLE)}")
        try:
            rules.append((re.compile(parts[0]), parts[1]))
        except re.error as exc:
            raise ValueError(f"{source}:{n}: bad regex: {exc}") from exc
    return Taxonomy(version, tuple(rules))


def series_for(kernel_release: str) -> str:
    """'6.18.44-fc' -> 'linux-6', '5.4.43' -> 'linux-5'."""
    major = kernel_release.split(".", 1)[0]
    return f"linux-{major}"


@lru_cache(maxsize=None)
def load(series: str = "linux-6") -> Taxonomy:
    name = series[:-4] if series.endswith(".tsv") else series
    try:
        text = resources.files(__package__).joinpath(f"{name}.tsv").read_text()
    except FileNotFoundError as exc:
        raise ValueError(f"no taxonomy for kernel series {series!r}; add hostnet/taxonomy/{name}.tsv") from exc
    return parse_taxonomy(text, f"{name}.tsv", include=load)
