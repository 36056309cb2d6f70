"""hostnet.probes.kernel_source: the patched kernel's histograms when the whole rx_prof series is
present, bpftrace otherwise."""
import os

import pytest

from conftest import FakeHost, patched_kernel_host
from hostnet.probes import kernel_source
from hostnet.hosts import LocalHost


def test_source_is_the_kernel_when_the_series_is_present():
    assert kernel_source.latency_source(patched_kernel_host())[0] == kernel_source.KERNEL


def test_source_falls_back_to_ebpf_on_a_stock_or_partial_kernel():
    stock = FakeHost("stock", handlers={"bpftrace": lambda a, h: (0, "", "")})
    source, why = kernel_source.latency_source(stock)
    assert source == kernel_source.EBPF and "stock kernel" in why
    partial = patched_kernel_host()
    del partial.files["/proc/sys/net/core/gso_honour_off"]
    source, why = kernel_source.latency_source(partial)
    assert source == kernel_source.EBPF and "net.core.gso_honour_off" in why
    assert kernel_source.latency_source(FakeHost("bare"))[0] == "none"


def test_this_machines_stock_kernel_reports_the_ebpf_source():
    if os.path.exists(kernel_source.RX_PROF_FILE):
        pytest.skip("this kernel has the rx_prof series")
    source, why = kernel_source.latency_source(LocalHost())
    assert source in (kernel_source.EBPF, "none") and "stock kernel" in why
