"""Measure the container CPU (cgroup cpuacct.usage, host side) of steps run in one container.
usage: measure.py IMAGE CMDFILE [steps...]; each step: label=shell (run via docker exec -i, key on stdin)
Prints JSON: {label: cpu_s, ..., 'start': cpu_s of the idle container, 'total': ...}"""
import json, subprocess, sys, time

def usage(cid):
    return int(open(f"/sys/fs/cgroup/cpuacct/docker/{cid}/cpuacct.usage").read()) / 1e9

def main():
    image = sys.argv[1]
    steps = [s.split("=", 1) for s in sys.argv[2:]]
    cid = subprocess.run(["nice", "-n", "10", "docker", "run", "-d", "--network", "none", image, "sleep", "infinity"],
                         check=True, capture_output=True, text=True).stdout.strip()
    try:
        time.sleep(0.3)
        out = {"start": round(usage(cid), 3)}
        prev = usage(cid)
        for label, cmd in steps:
            if cmd.startswith("@"):
                cmd = open(cmd[1:]).read()
            t = time.monotonic()
            r = subprocess.run(["nice", "-n", "10", "docker", "exec", "-i", cid, "bash", "-c", cmd],
                               input="00112233445566778899aabbccddeeff\n", capture_output=True, text=True)
            now = usage(cid)
            tail = (r.stdout + r.stderr).strip().splitlines()[-1:] 
            out[label] = round(now - prev, 3)
            out[label + ":wall"] = round(time.monotonic() - t, 2)
            out[label + ":rc"] = r.returncode
            out[label + ":tail"] = tail[0][-120:] if tail else ""
            out[label + ":out"] = r.stdout[-30000:]
            prev = now
        out["total"] = round(usage(cid), 3)
    finally:
        subprocess.run(["docker", "rm", "-f", cid], capture_output=True)
    print(json.dumps(out))

main()
