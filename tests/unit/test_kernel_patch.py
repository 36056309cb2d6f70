"""kernel_patch/check_console.py: the boot test's console checks pass on the captured console
(tests/fixtures/rx_prof_console.txt) and fail on doctored copies of it."""
import importlib.util

from conftest import REPO, RX_PROF_CONSOLE, fixture_text, rx_prof_phase
from hostnet.parsers.rx_prof import parse_rx_prof


def _check_console():
    spec = importlib.util.spec_from_file_location("check_console", REPO / "kernel_patch" / "check_console.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_boot_console_checks_pass_on_the_captured_console():
    checks, notes = _check_console().evaluate(fixture_text(RX_PROF_CONSOLE))
    assert all(ok for ok, _ in checks), [what for ok, what in checks if not ok]
    assert any(n.startswith("udp:") for n in notes)


def test_boot_console_checks_fail_without_the_patch_or_with_wrong_loss():
    mod = _check_console()
    checks, _ = mod.evaluate("=== RXPROF kernel 6.12.117\n=== RXPROF PATCH-ABSENT\n")
    assert not all(ok for ok, _ in checks)
    text = fixture_text(RX_PROF_CONSOLE)
    udp = parse_rx_prof(rx_prof_phase("loss-udp"))
    tripled = text.replace(f"packet_loss_gen_drops {udp['packet_loss_gen_drops']}",
                           f"packet_loss_gen_drops {3 * udp['packet_loss_gen_drops']}")
    checks, _ = mod.evaluate(tripled)
    assert [what for ok, what in checks if not ok][0].startswith("UDP drop rate")


def test_boot_console_checks_fail_on_a_short_flow_an_unselected_loss_or_forced_gso():
    mod, text = _check_console(), fixture_text(RX_PROF_CONSOLE)

    def failed(t):
        return [what for ok, what in mod.evaluate(t)[0] if not ok]
    short = text.replace("rxload tcp port=5005 bytes=8388608", "rxload tcp port=5005 bytes=8388000")
    assert [w.split(" (")[0] for w in failed(short)] == ["every TCP flow moved the bytes boot/init asked for"]
    nosel = parse_rx_prof(rx_prof_phase("loss-noselector"))
    start = text.index("=== RXPROF phase loss-noselector")
    dropping = text[:start] + text[start:].replace(
        f"packet_loss_gen_drops {nosel['packet_loss_gen_drops']}",
        f"packet_loss_gen_drops {nosel['packet_loss_gen_drops'] + 200}", 1)
    assert any(w.startswith("packet_loss_gen=20000 with neither") for w in failed(dropping))
    # gso1 as if TCP had still built GSO skbs: as few IP skbs as in the forced window
    snmp = mod.parse_snmp_blocks(text)
    assert set(snmp) == {"gso-start", "gso0", "gso1"}
    segs, extra = mod.extra_segments(snmp, "gso0", "gso1")
    assert extra == 0 and segs > 8 * 2**20 // 1448
    forced_segs, forced_extra = mod.extra_segments(snmp, "gso-start", "gso0")
    assert forced_extra > forced_segs // 2
    out_req = snmp["gso1"]["Ip"]["OutRequests"]
    start = text.index("=== RXPROF snmp gso1")
    gso = text[:start] + text[start:].replace(f" {out_req} ", f" {out_req - forced_extra} ", 1)
    assert [w.split(" (")[0] for w in failed(gso)] == ["gso_honour_off=1: one segment per skb"]


def test_a_guest_on_a_tick_clock_fails_naming_its_clock():
    """The CI console where the guest fell back to refined-jiffies: the latency median is 0 and
    the failing checks say which clock the guest ran on, not only that the median is wrong."""
    checks, notes = _check_console().evaluate(fixture_text("rx_prof_console_jiffies.txt"))
    failed = [what for ok, what in checks if not ok]
    assert [w.split(" (")[0] for w in failed] == ["the guest's clock resolves sub-tick latencies",
                                                  "median latency bucket is between 100 ns and 1 s"]
    assert "clocksource refined-jiffies; a tick clock reads most latencies as 0" in failed[0]
    assert "guest clocksource: refined-jiffies" in notes
    passed = _check_console().evaluate(fixture_text(RX_PROF_CONSOLE))
    assert "guest clocksource: tsc" in passed[1]
