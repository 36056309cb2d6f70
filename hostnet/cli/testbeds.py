"""`hostnet testbed up|status|down|check` (the embedded testbed, or the NIC rehearsal's guests with
--nic) and `hostnet restore` (what a crashed or killed session left)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from . import commands, live_edge
from .edge import die
from .live_edge import live_options, steering_option
from .. import testbed  # its modules (servers, guests, as_servers, ...) load as a handler names them
from ..hosts.base import remove_dead_scratch
from ..knobs.journal_file import HOST_DIR
from ..knobs.machine import Ledger


def register(sub) -> None:
    """testbed and restore: build, inspect or remove a testbed; undo what a dead session left."""
    t = commands.add(sub, "testbed")
    t.add_argument("action", choices=("up", "status", "down", "check"))
    t.add_argument("file", nargs="?", help="check: a testbed.yaml of real servers (default: the embedded testbed)")
    t.add_argument("--name", default="default", help="1-8 lowercase letters/digits (default: default)")
    t.add_argument("--sender-cpus", type=int, nargs="+", default=[0])
    t.add_argument("--receiver-cpus", type=int, nargs="+", default=[1])
    t.add_argument("--senders", type=int, default=1, help="sender namespaces (a bridge joins more than two hosts)")
    t.add_argument("--receivers", type=int, default=1, help="receiver namespaces")
    t.add_argument("--ssh", action="store_true", help="an sshd in each namespace; endpoints driven through SSH")
    t.add_argument("--bastion", action="store_true", help="with --ssh: a jump host namespace and a management "
                                                          "network; --write-yaml then reaches the endpoints through it")
    t.add_argument("--write-yaml", metavar="PATH", help="with --ssh --bastion: write a testbed.yaml (and PATH's "
                                                        ".ssh_config): the testbed as servers reached over SSH; "
                                                        "with --nic: where the guests' testbed.yaml goes")
    t.add_argument("--nic", choices=("e1000e", "virtio", "e1000"), help="the NIC rehearsal: two QEMU guests with this "
                   "emulated NIC, driven over SSH through a testbed.yaml (functional only, never a measurement)")
    t.add_argument("--iommu", action="store_true", help="with --nic: the guests' NIC behind an emulated Intel IOMMU")
    steering_option(t)
    t.set_defaults(func=cmd_testbed)

    s = commands.add(sub, "restore")
    s.add_argument("--name", help="only this testbed (also a persistent one, whose namespaces are kept)")
    s.add_argument("--file", help="a testbed.yaml of real servers: stop hostnet's processes there, restore settings")
    s.set_defaults(func=cmd_restore)


def _unanswered(caps_by_host: dict) -> int:
    """1 when a host did not answer (each named with its reason on stderr, one line), else 0."""
    lost = {h: c["reachable"].detail for h, c in caps_by_host.items() if c.get("reachable") and not c["reachable"].ok}
    for host, why in lost.items():
        print(f"hostnet: {host} is not reachable: {' '.join(str(why).split())}", file=sys.stderr)
    return 1 if lost else 0


def _check(args) -> int:
    if args.file:
        tb = testbed.servers.from_yaml(args.file)
        caps = {e.host.name: testbed.capabilities.detect(e.host, e.iface) for e in tb.endpoints.values()}
        print(testbed.capabilities.table(caps))
        return _unanswered(caps)
    live_edge.require_live(("ip",))

    def show(tb):
        caps = {e.role: testbed.capabilities.detect(e.host, e.iface) for e in tb.endpoints.values()}
        caps["root namespace"] = testbed.capabilities.detect(tb.machines["local"])
        print(f"testbed {tb.name}: {'; '.join(tb.notes)}")
        print(testbed.capabilities.table(caps))
    if args.name in {r["name"] for r in testbed.status()}:
        show(testbed.attach(args.name))
    else:  # nothing up under that name: check a temporary one
        with testbed.embedded(testbed.unique_name("c"), ssh=args.ssh) as tb:
            show(tb)
    return 0


def cmd_testbed(args) -> int:
    if args.action == "check":
        return _check(args)
    if args.nic or args.iommu or args.action == "down" and testbed.guests.has_state(args.name):
        return _guests(args)
    if args.action == "up":
        if (args.write_yaml or args.bastion) and not args.ssh:
            die("--write-yaml and --bastion describe the testbed as servers reached over SSH: add --ssh")
        if args.write_yaml and not args.bastion:  # refused here, not by the first run that reads the file
            die("--write-yaml needs --bastion: without a management network the SSH sessions reach each "
                 "namespace over its data interface, which hostnet never changes (knobs/guard.py), so no run "
                 "could use the testbed.yaml")
        live_edge.require_live(("ip",))
        tb = testbed.up(args.name, args.sender_cpus, args.receiver_cpus, persistent=True,
                        n_senders=args.senders, n_receivers=args.receivers, ssh=args.ssh, bastion=args.bastion,
                        steering=live_options(args).steering)
        print(f"testbed {tb.name} is up ({'; '.join(tb.notes)}):")
        for e in tb.endpoints.values():
            print(f"  {e.role:<10} {e.ip:<13} {e.ip6 or '':<11} {e.iface:<14} CPUs {e.cpus}  "
                  f"via {e.host.describe()['kind']}")
        if args.write_yaml:
            try:
                path, conf = testbed.as_servers.write(args.name, args.write_yaml)
            except BaseException:
                testbed.down(args.name)  # a testbed the user cannot use as asked is not left up
                raise
            print(f"as servers: {path} (ssh_config {conf}); e.g. hostnet run single-flow --testbed {path}")
    elif args.action == "status":
        rows = testbed.status() + testbed.guests.status()
        if not rows:
            print("no embedded testbed and no NIC rehearsal is up")
        for r in rows:
            print(json.dumps(r))
    else:
        return _down("testbed", args.name, testbed.down(args.name))
    return 0


def _down(what: str, name: str, problems: list[str]) -> int:
    """What a teardown says: its problems (exit 2), or that every journaled setting is back."""
    if problems:
        die("teardown problems: " + "; ".join(problems))
    print(f"{what} {name} is down; every journaled setting restored")
    return 0


def _guests(args) -> int:
    """`testbed up --nic` and the guests' status and down (testbed/guests.py: the NIC rehearsal)."""
    if args.action == "up":
        if not args.nic:
            die("--iommu needs --nic e1000e, virtio or e1000")
        if args.ssh or args.bastion or args.senders != 1 or args.receivers != 1:
            die("--nic boots two guests reached over SSH: --ssh, --bastion, --senders and --receivers do not apply")
        try:
            path = testbed.guests.up(args.name, args.nic, args.iommu, yaml_path=args.write_yaml)
        except testbed.guest_boot.GuestsUnsupported as exc:
            die(f"unsupported: {exc}")
        st = testbed.guests.state_of(args.name)
        print(f"NIC rehearsal {args.name} is up in {st['boot_s']} s: two guests with {args.nic}"
              f"{' behind an IOMMU' if args.iommu else ''} (Linux {st['kernel']}; {st['accel']})")
        print(f"  {testbed.guests.LABEL}")
        print(f"as servers: {path}; e.g. hostnet run single-flow --testbed {path}")
        return 0
    if args.action != "down":
        die(f"testbed {args.action} does not take --nic or --iommu")
    return _down("NIC rehearsal", args.name, testbed.guests.down(args.name))


def cmd_restore(args) -> int:
    """Undo what crashed or killed sessions left behind (processes, settings, namespaces)."""
    if args.file:
        problems, sources = testbed.servers.restore(args.file)
        if problems:
            die("; ".join(problems))
        if not sources:
            print(f"hostnet: warning: no journal of {args.file} found (neither in {testbed.state_dir()} nor in "
                  f"{HOST_DIR} on its hosts): no setting was put back", file=sys.stderr)
            return 1
        print(f"restored {args.file} from {' and '.join(sources)}: hostnet's processes stopped, journaled "
              f"settings put back")
        return 0
    names = [args.name] if args.name else testbed.stale()
    held = _held_elsewhere()
    crumbs = _remove_crumbs()
    if not names:
        print("nothing to restore: no testbed was left behind by a dead session" + crumbs + held)
        return 0
    failed = []
    for name in names:
        servers = testbed.leftovers.is_servers(name)
        problems = testbed.restore(name)
        if problems:
            failed.append(f"{name}: " + "; ".join(problems))
        elif servers:
            print(f"restored {name}: journaled settings put back on its servers (stop hostnet's processes "
                  f"there with `hostnet restore --file` and its testbed.yaml)")
        else:
            kept = " (persistent testbed kept up)" if testbed.is_persistent(name) else ""
            print(f"restored {name}: processes stopped, journaled settings put back{kept}")
    if crumbs:
        print(crumbs.lstrip("; "))
    if failed:
        die(" | ".join(failed))
    if held := _held_elsewhere():
        print(held.lstrip("; "))
    return 0


def _remove_crumbs() -> str:
    """Scratch files dead sessions left (tool output, perf.data), removed; what was removed."""
    count, size = remove_dead_scratch()
    return f"; removed {count} scratch files of dead sessions ({size / 1e6:.1f} MB)" if count else ""


def _held_elsewhere() -> str:
    """Host-wide settings live testbeds hold (knobs/machine.py), which a restore leaves in place."""
    held = [f"{e['knob']}[{e['key']}] = {v!r} by {Path(j).stem}"
            for e in Ledger(fallback=testbed.state_dir()).held() for j, v in e["holders"].items()]
    return ("; host-wide settings held by live testbeds, left as they are until the last lets go: "
            + ", ".join(held)) if held else ""
