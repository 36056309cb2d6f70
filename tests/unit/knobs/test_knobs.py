"""The knob registry (hostnet.knobs.KNOBS): whatever text a user types as a key or value of any
knob is rejected or reaches the tool as one literal argument, never a shell."""
import re

from hypothesis import given, settings, strategies as st

from conftest import FakeHost
from hostnet.hosts import HostError
from hostnet.knobs import KNOBS, KnobError


# Keys and values are interface names, queue keys, sysctl names and values: whatever text a user
# types must be rejected or reach the tool as one literal argv element, never a shell.
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=400, deadline=None)
@given(knob=st.sampled_from(sorted(KNOBS)), key=text, value=text)
def test_arbitrary_input_is_rejected_or_one_literal_argument(knob, key, value):
    host = FakeHost(handlers={t: (lambda argv, h: (0, "", "")) for t in (
        "ethtool", "ip", "nft", "systemctl", "wrmsr", "rdmsr", "ls", "modprobe", "sh", "bash")})
    try:
        KNOBS[knob].validate(key, value)
        KNOBS[knob].write_unverified(host, key, value)
    except (KnobError, HostError):
        return  # rejected (or the fake host has no such file): nothing interpreted
    for argv in host.commands:
        assert argv[0] not in ("sh", "bash"), argv
    acting = [argv for argv in host.commands if argv[1:2] != ["-j"] and argv[1:2] != ["list"]]
    if acting and knob != "loss":  # loss passes its validated interface inside an nft script on stdin
        assert any(key in argv or key.split("/", 1)[0] in argv for argv in acting), (key, acting)
    if knob == "loss":
        assert re.fullmatch(r"[\w.-]{1,15}", key)
