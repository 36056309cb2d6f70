"""knob_trials (hostnet.testbed.knob_trials) on a fake e1000e: a host that answers ethtool as the
NIC rehearsal's emulated 82574L did (tests/fixtures/nic-rehearsal/), with state, so a trial's
outcome, its read-back and the journal's restore are all exercised. The real driver answers in
tests/live/test_live_nic_rehearsal.py."""
import json
import re

from conftest import FakeHost, fixture_text
from hostnet.knobs import Journal
from hostnet.testbed import knob_trials
from hostnet.testbed.base import Endpoint, Testbed

REFUSED_C = fixture_text("nic-rehearsal/e1000e_ethtool_C_rx-usecs_7.txt")
REFUSED_N = fixture_text("nic-rehearsal/e1000e_ethtool_N.txt")
NO_CHANNELS = fixture_text("nic-rehearsal/e1000e_ethtool_l.txt")
TOO_BIG = fixture_text("nic-rehearsal/e1000e_ethtool_G_rx_8192.txt")


class FakeE1000e(FakeHost):
    def __init__(self):
        self.rings = {"rx": 256, "tx": 256}
        self.usecs = 3
        self.features = {f: True for f in ("tcp-segmentation-offload", "generic-segmentation-offload",
                                           "generic-receive-offload")}
        self.mtu = 1500
        interrupts = fixture_text("nic-rehearsal/e1000e_proc_interrupts.txt")
        irqs = fixture_text("nic-rehearsal/e1000e_msi_irqs.txt").split()
        super().__init__("receiver", files={"/proc/interrupts": interrupts,
                                            **{f"/proc/irq/{i}/smp_affinity_list": "0-1\n" for i in irqs}},
                         handlers={"ethtool": self.ethtool, "ip": self.ip, "nproc": lambda a, h: (0, "2\n", ""),
                                   "sh": lambda a, h: (0, "\n".join(irqs) + "\n", "")})

    def ethtool(self, argv, host):
        flag = argv[1]
        if flag == "-g":
            text = fixture_text("nic-rehearsal/e1000e_ethtool_g.txt")
            cur = text.index("Current hardware settings")
            return 0, text[:cur] + re.sub(r"(RX|TX):\t+256", lambda m: f"{m[1]}:\t\t{self.rings[m[1].lower()]}",
                                          text[cur:]), ""
        if flag == "-G":
            if int(argv[4]) > 4096:
                return 81, "", TOO_BIG
            self.rings[argv[3]] = int(argv[4])
            return 0, "", ""
        if flag == "-c":
            text = fixture_text("nic-rehearsal/e1000e_ethtool_c.txt")
            return 0, text.replace("rx-usecs: 3", f"rx-usecs: {self.usecs}"), ""
        if flag == "-C":
            if argv[3] != "rx-usecs" or 4 <= int(argv[4]) <= 9:
                return 1, "", REFUSED_C
            self.usecs = int(argv[4])
            return 0, "", ""
        if flag == "-k":
            text = fixture_text("nic-rehearsal/e1000e_ethtool_k.txt")
            for name, on in self.features.items():
                text = re.sub(rf"^{name}: \w+", f"{name}: {'on' if on else 'off'}", text, flags=re.M)
            return 0, text, ""
        if flag == "-K":
            name = {"tso": "tcp-segmentation-offload", "gso": "generic-segmentation-offload",
                    "gro": "generic-receive-offload"}[argv[3]]
            self.features[name] = argv[4] == "on"
            return 0, "", ""
        if flag in ("-l", "-L"):
            return 1, "", NO_CHANNELS
        if flag in ("-n", "-N"):
            return 1, "", REFUSED_N
        raise AssertionError(argv)

    def ip(self, argv, host):
        if "set" in argv:
            self.mtu = int(argv[argv.index("mtu") + 1])
            return 0, "", ""
        return 0, json.dumps([{"ifname": "data0", "mtu": self.mtu}]), ""

    def describe(self):
        return {"name": self.name, "kind": "FakeHost", "address": "fake-e1000e"}


def e1000e_testbed(host, tmp_path):
    ep = Endpoint("receiver", host, "data0", "198.18.2.2", [0], "receiver", irq_cpus=[1])
    return Testbed("nr1-guests", "servers", {"receiver": ep}, {"receiver": host}, Journal(tmp_path / "nr1.journal"))


def test_each_knob_is_set_refused_or_unsupported_as_the_driver_answers_and_put_back(tmp_path):
    host = FakeE1000e()
    trials, vectors = knob_trials.run(e1000e_testbed(host, tmp_path), "receiver")
    got = {(t.knob, t.asked): t for t in trials}
    assert vectors == {43: "data0-rx-0", 44: "data0-tx-0", 45: "data0"}
    assert got[("ring.rx", "512")].outcome == "set" and got[("ring.rx", "512")].before == "256"
    assert got[("ring.rx", "32768")].outcome == "refused" and "at most 4096" in got[("ring.rx", "32768")].message
    assert got[("coalesce.rx-usecs", "30")].outcome == "set"
    refused = got[("coalesce.rx-usecs", "7")]
    assert refused.outcome == "refused" and "Invalid argument" in refused.message and refused.after == "30"
    assert got[("coalesce.tx-usecs", "30")].outcome == "unsupported"
    assert got[("offload.lro", "on")].outcome == "unsupported" and "fixed" in got[("offload.lro", "on")].message
    assert got[("channels.combined", "2")].outcome == "unsupported"
    rule = got[("ntuple_rule", "flow-type tcp4 dst-port 5201 action 0")]
    assert rule.outcome == "refused" and "Operation not supported" in rule.message
    assert [t.asked for t in trials if t.knob == "irq_affinity"] == ["1", "1", "1"]  # the host's last CPU
    # the journal put everything back, and each changed setting was read again to say so
    assert host.rings == {"rx": 256, "tx": 256} and host.usecs == 3 and host.mtu == 1500
    assert all(host.features.values())
    assert all(t.restored for t in trials if t.outcome == "set")
    assert all(host.files[f"/proc/irq/{i}/smp_affinity_list"].strip() == "0-1" for i in (43, 44, 45))


def test_the_table_names_every_trial_with_the_driver_s_words(tmp_path):
    trials, _ = knob_trials.run(e1000e_testbed(FakeE1000e(), tmp_path), "receiver")
    table = knob_trials.markdown(trials, "e1000e")
    assert table.count("\n") == len(trials) + 1
    assert "| ring.rx | data0 | 32768 | refused |" in table and "Invalid argument" in table
    assert "| ring.rx | data0 | 512 | set | 256 → 512 | yes |" in table
