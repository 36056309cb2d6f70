"""The NIC rehearsal behind an emulated IOMMU (`hostnet testbed up --nic virtio --iommu`): the guests'
virtio-net (modern-only, iommu_platform=on) sits behind QEMU's intel-iommu, so every buffer the
driver hands the NIC is mapped through the DMA API, the paper's §3.9 path. One paced ladder point
runs over SSH and its profile must hold the DMA-mapping functions (the taxonomy books them as
mm: tests/unit/taxonomy).
Marked `nic` (make test-nic). Under TCG: functional, not a measurement."""
import os
import re
from pathlib import Path

import pytest

from conftest import live_ready
from hostnet import cli, store
from hostnet.testbed import guests
from test_live_nic_rehearsal import run_paced_point, state  # noqa: F401 (state: the module's state dir)

pytestmark = [pytest.mark.live, pytest.mark.nic,
              pytest.mark.skipif(live_ready() is not None, reason=str(live_ready()))]

# the Intel IOMMU's mapping path under dma_map_page: iommu_dma_map_page -> __iommu_map ->
# intel_iommu_map_pages -> __domain_mapping -> pfn_to_dma_pte, and the unmap's IOTLB flush
DMA_MAPPING = re.compile(r"^(iommu_dma_\w+|__?iommu_\w+|intel_iommu_\w+|__domain_mapping|pfn_to_dma_pte|"
                         r"dma_pte_\w+|domain_unmap|qi_\w+|cache_tag_flush_\w+|iova_\w+|alloc_iova\w*|"
                         r"free_iova\w*|dma_map_page_attrs|dma_unmap_page_attrs)$")


@pytest.fixture(scope="module")
def iommu(state):  # noqa: F811
    name = f"ni{os.getpid() % 100000}"
    try:
        assert cli.main(["testbed", "up", "--nic", "virtio", "--iommu", "--name", name]) == 0
        yield name, Path(guests.state_of(name)["yaml"])
    finally:
        assert guests.down(name) == []


def dma_share(folded: str) -> tuple[float, dict[str, int]]:
    """(% of busy samples, those without an idle loop on their stack, with a DMA-mapping function on
    it; leaf samples by such function)."""
    busy = with_dma = 0
    leaves: dict[str, int] = {}
    for line in folded.splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        if not stack or "do_idle" in frames:
            continue
        n = int(count)
        busy += n
        if any(DMA_MAPPING.match(f) for f in frames):
            with_dma += n
        if DMA_MAPPING.match(frames[-1]):
            leaves[frames[-1]] = leaves.get(frames[-1], 0) + n
    return (100.0 * with_dma / busy if busy else 0.0), leaves


MAPS = {"__domain_mapping", "pfn_to_dma_pte", "iommu_dma_map_page", "__iommu_map", "intel_iommu_map_pages"}
UNMAPS = {"__iommu_dma_unmap", "iommu_dma_unmap_page", "__iommu_unmap", "dma_pte_clear_level", "domain_unmap"}


def test_the_dma_mapping_functions_are_in_the_profile_behind_the_iommu(iommu, tmp_path):
    name, path = iommu
    # no-opts: virtio-net over QEMU's socket backend has no TSO to turn on ("Could not change any device features")
    # Behind the IOMMU the window's probes took 31 s to open at 20 Mbit/s, and it closes 3x that before the
    # flow ends: 90 s left no window. 150 s at 10 Mbit/s.
    run, m = run_paced_point(path, tmp_path / "runs", "no-opts", duration_s=150, rate_mbps=10)
    print({k: round(m["window"][k] - m["started"], 1) for k in ("clients_started", "opened", "start", "end",
                                                                "closed")}, round(m["ended"] - m["started"], 1))
    assert m["status"] == "ok" and store.flagged(m) == "rehearsal"
    texts = store.raw_texts(run, ["sender.perf_folded.txt", "receiver.perf_folded.txt"])
    for side in ("sender", "receiver"):
        share, leaves = dma_share(texts[f"{side}.perf_folded.txt"])
        print(side, f"{share:.1f} % of busy samples under a DMA-mapping function; leaves:",
              sorted(leaves.items(), key=lambda kv: -kv[1])[:6])
        # measured: 4.7 % on each side; pfn_to_dma_pte, __domain_mapping, dma_pte_clear_level among the leaves
        assert share > 1.0, (side, share)
        assert set(leaves) & MAPS and set(leaves) & UNMAPS, (side, leaves)
