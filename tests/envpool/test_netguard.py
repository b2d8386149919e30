"""The build network's host isolation (envpool.netguard): rules as data, and a setup container
that reaches the registries but no listener of the host."""

from __future__ import annotations

import ipaddress
import socket
import threading
import time

import pytest

from envpool.netguard import BuildNetworkConfig, forward_rules, primary_address
from tests.session import SESSION

IFACES = [ipaddress.IPv4Interface("127.0.0.1/8"), ipaddress.IPv4Interface("192.0.2.2/24"),
          ipaddress.IPv4Interface("172.17.0.1/16")]


def test_dns_and_allow_entries_return_before_any_drop():
    rules = forward_rules(BuildNetworkConfig(allow=["10.1.2.3:3128", "10.9.0.0/16"]), IFACES, ["10.255.255.53"])
    targets = [r[-1] for r in rules]
    first_drop = targets.index("DROP")
    assert set(targets[:first_drop]) == {"RETURN"} and "RETURN" not in targets[first_drop:]
    assert ["-d", "10.255.255.53/32", "-p", "udp", "--dport", "53", "-j", "RETURN"] in rules
    assert ["-d", "10.1.2.3/32", "-p", "tcp", "--dport", "3128", "-j", "RETURN"] in rules
    assert ["-d", "10.9.0.0/16", "-j", "RETURN"] in rules


def test_private_metadata_and_the_hosts_own_subnets_are_dropped():
    drops = {r[1] for r in forward_rules(BuildNetworkConfig(), IFACES, []) if r[-1] == "DROP"}
    for cidr in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "127.0.0.0/8",
                 "192.0.2.0/24", "192.0.2.2/32", "172.17.0.0/16", "172.17.0.1/32"):
        assert cidr in drops
    # 192.0.2.0/24 is TEST-NET-1: not private, dropped only because it is the host's own subnet
    off = {r[1] for r in forward_rules(BuildNetworkConfig(block_host_subnets=False), IFACES, [])}
    assert "192.0.2.0/24" not in off


def test_bad_config_values_are_errors():
    with pytest.raises(ValueError):
        BuildNetworkConfig(bridge="a-name-longer-than-15")
    with pytest.raises(ValueError):
        BuildNetworkConfig(allow=["10.0.0.1:99999"])
    with pytest.raises(ValueError):
        BuildNetworkConfig(blocked=["not-a-cidr"])
    with pytest.raises(ValueError):
        BuildNetworkConfig(unknown=1)


class _Listener:
    """A TCP listener on `ip` counting accepted connections."""

    def __init__(self, ip: str):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((ip, 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.ip, self.port = self.sock.getsockname()
        self.accepted = 0
        self._stop = False
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
                self.accepted += 1
                conn.close()
            except socket.timeout:
                continue
            except OSError:
                return

    def close(self) -> None:
        time.sleep(0.5)
        self._stop = True
        self._thread.join(2)
        self.sock.close()


def _connects(sb, ip: str, port: int) -> bool:
    r = sb.exec(f"timeout 3 bash -c 'echo x > /dev/tcp/{ip}/{port}' && echo OPEN || echo CLOSED", timeout=15)
    return "OPEN" in r.output


@pytest.mark.docker
def test_a_setup_container_reaches_the_registry_but_no_listener_of_the_host(docker_client, python_image):
    from envpool.docker_sandbox import DockerSandboxFactory
    from envpool.netguard import ensure_build_network
    from envpool.sandbox import SandboxSpec

    cfg = BuildNetworkConfig()
    ensure_build_network(docker_client, cfg)
    net = docker_client.networks.get(cfg.name)
    gateway = net.attrs["IPAM"]["Config"][0]["Gateway"]
    primary = primary_address()
    listeners = [_Listener(gateway), _Listener(primary), _Listener("172.17.0.1")]
    factory = DockerSandboxFactory(run_id=f"test-netguard-{SESSION}", client=docker_client, build_network=cfg)
    try:
        with factory.sandbox(SandboxSpec(image=python_image, run_id=f"test-netguard-{SESSION}", network="bridge")) as sb:
            for lst in listeners:
                assert not _connects(sb, lst.ip, lst.port), f"{lst.ip} reachable from a build container"
            assert not _connects(sb, "169.254.169.254", 80)
            # the registries stay reachable through NAT (the positive control)
            r = sb.exec("timeout 8 bash -c 'echo > /dev/tcp/pypi.org/443' && echo OPEN", timeout=20)
            assert "OPEN" in r.output, r.output
        # control: the same listeners are reachable from Docker's default bridge, so the zero
        # above is the guard's doing and not this host's
        c = docker_client.containers.run(python_image, ["bash", "-c", f"timeout 3 bash -c 'echo x > "
                                          f"/dev/tcp/{primary}/{listeners[1].port}' && echo OPEN"],
                                          network_mode="bridge", remove=True, labels={"swemint.run": "test-netguard"})
        assert b"OPEN" in c
    finally:
        for lst in listeners:
            lst.close()
        factory.sweep()
    assert listeners[0].accepted == 0 and listeners[2].accepted == 0
    assert listeners[1].accepted == 1  # the control's connection only


@pytest.mark.docker
def test_a_test_run_has_no_route_out_but_loopback_and_its_own_hostname_work(docker_client, python_image):
    from envpool.docker_sandbox import DockerSandboxFactory
    from envpool.sandbox import SandboxSpec

    probe = (
        "import socket\n"
        "print('self', socket.gethostbyname(socket.gethostname()))\n"
        "srv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(1)\n"
        "socket.create_connection(srv.getsockname(), timeout=3); print('loopback ok')\n"
        "for target in [('203.0.113.80', 443), ('1.1.1.1', 53), ('172.17.0.1', 22), ('" + primary_address() + "', 22)]:\n"
        "    try:\n"
        "        socket.create_connection(target, timeout=3); print('REACHED', target)\n"
        "    except OSError as e:\n"
        "        print('unreachable', target, e.errno)\n"
        "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "try:\n"
        "    u.connect(('8.8.8.8', 80)); print('REACHED udp')\n"
        "except OSError as e:\n"
        "    print('udp unreachable', e.errno)\n"
        "try:\n"
        "    socket.getaddrinfo('pypi.org', 443); print('REACHED dns')\n"
        "except OSError:\n"
        "    print('no dns')\n")
    factory = DockerSandboxFactory(run_id=f"test-offline-{SESSION}", client=docker_client)
    with factory.sandbox(SandboxSpec(image=python_image, run_id=f"test-offline-{SESSION}", network="none")) as sb:
        sb.put_file("/tmp/probe.py", probe)
        r = sb.exec("python3 /tmp/probe.py", timeout=60)
    assert r.ok, r.output
    assert "self 127.0.1.1" in r.output and "loopback ok" in r.output
    assert "REACHED" not in r.output and r.output.count("unreachable") == 5 and "no dns" in r.output
