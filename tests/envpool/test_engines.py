"""Node engines on one host share nothing (issue 27, item 1): folders, sockets, bridges and
subnets are their own, the engine never rewrites the host's Docker chains, and it names its
build network's bridge so that the same guard covers it."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from envpool import engines
from envpool.netguard import BuildNetworkConfig, ENGINE_BRIDGE_LABEL, engine_build_bridge, ensure_build_network


def test_two_nodes_share_no_folder_socket_bridge_or_address(tmp_path):
    a, b = engines.node_engine(2, 0, tmp_path), engines.node_engine(2, 1, tmp_path)
    assert {a.data_root, a.exec_root, a.socket, a.pidfile}.isdisjoint({b.data_root, b.exec_root, b.socket, b.pidfile})
    assert len({a.bridge, a.build_bridge, b.bridge, b.build_bridge}) == 4
    assert all(len(n) <= 15 for n in (a.bridge, a.build_bridge))  # Linux interface names
    nets = [ipaddress.ip_network(x) for x in (a.cidr, b.cidr)]
    assert not nets[0].overlaps(nets[1])
    for eng, net in ((a, nets[0]), (b, nets[1])):  # the default bridge and the pool lie inside the node's range
        assert ipaddress.ip_interface(eng.bip).network.subnet_of(net)
        assert ipaddress.ip_network(eng.pool).subnet_of(net)
        assert not ipaddress.ip_interface(eng.bip).network.overlaps(ipaddress.ip_network(eng.pool))
    # another cluster slot on the same host: other names, other addresses
    c = engines.node_engine(3, 0, tmp_path)
    assert c.bridge != a.bridge and not ipaddress.ip_network(c.cidr).overlaps(nets[0])
    with pytest.raises(ValueError):
        engines.node_engine(8, 0, tmp_path)


def test_dockerd_never_touches_the_hosts_chains_and_names_its_build_bridge(tmp_path):
    eng = engines.node_engine(0, 1, tmp_path)
    cmd = engines.dockerd_command(eng, ["127.0.0.1:5000"])
    assert "--iptables=false" in cmd and "--ip-masq=false" in cmd
    for part in (f"--data-root={eng.data_root}", f"--exec-root={eng.exec_root}", f"-H=unix://{eng.socket}",
                 f"--pidfile={eng.pidfile}", f"--bridge={eng.bridge}", f"--default-address-pool=base={eng.pool},size=24",
                 f"--label={ENGINE_BRIDGE_LABEL}={eng.build_bridge}", f"--label=swemint.node={eng.name}",
                 "--insecure-registry=127.0.0.1:5000"):
        assert part in cmd
    assert not any(c.startswith("-H=unix:///var/run/docker.sock") for c in cmd)
    # what the engine would have installed, for its own range only, in a chain of ours
    rules = engines.nat_rules(eng)
    assert ("nat", ["-s", eng.cidr, "!", "-d", eng.cidr, "-j", "MASQUERADE"]) in rules
    assert all(eng.cidr in r for _, r in rules)


class _Engine:
    """A docker client double: `info()` with engine labels, `api.base_url` of a local socket."""

    def __init__(self, labels):
        self.labels = labels
        self.api = type("Api", (), {"base_url": "http+docker://localhost"})()

    def info(self):
        return {"Labels": self.labels}


def test_the_build_network_uses_the_bridge_its_engine_declares(monkeypatch):
    import envpool.netguard as ng

    assert engine_build_bridge(_Engine([f"{ENGINE_BRIDGE_LABEL}=swc0b1", "other=x"])) == "swc0b1"
    assert engine_build_bridge(_Engine([])) is None
    guarded = []
    monkeypatch.setattr(ng, "_create_network", lambda client, cfg: guarded.append(("net", cfg.bridge)))
    monkeypatch.setattr(ng, "install_rules", lambda cfg: guarded.append(("rules", cfg.bridge)))
    monkeypatch.setattr(ng, "_ensured", {})
    client = _Engine([f"{ENGINE_BRIDGE_LABEL}=swc0b1"])
    assert ensure_build_network(client, BuildNetworkConfig()) == "swemint-build"
    assert guarded == [("net", "swc0b1"), ("rules", "swc0b1")]  # the guard goes on the node's own bridge


def test_stop_removes_only_the_nodes_own_rules(monkeypatch, tmp_path):
    eng = engines.node_engine(0, 2, tmp_path)
    calls = []
    monkeypatch.setattr(engines, "_iptables", lambda *a, table="filter", check=True:
                        calls.append((table, a)) or type("R", (), {"returncode": 1})())
    engines.remove_nat(eng)
    deleted = [a for _, a in calls if a[0] == "-D"]
    assert deleted and all(a[1] == engines.NODE_CHAIN and eng.cidr in a for a in deleted)
    assert not any(a[0] in ("-F", "-X") for _, a in calls)  # the chain stays: other nodes use it


def test_kill_engine_without_a_running_engine_is_a_no_op(tmp_path):
    eng = engines.node_engine(0, 3, tmp_path)
    Path(eng.root).mkdir(parents=True)
    eng.pidfile.write_text("999999999")
    assert engines.engine_pid(eng) is None and engines.kill_engine(eng) is None
