# sources whose .pyc a write-enabled run just wrote (newer than /tmp/mark): CPU to compile them
import os, sys, time, importlib.util
srcs = []
for root in ("/testbed", "/opt/venv", "/opt/swemint", "/usr/lib/python3"):
    for dp, dn, fn in os.walk(root):
        if os.path.basename(dp) != "__pycache__":
            continue
        for f in fn:
            p = os.path.join(dp, f)
            if os.path.getmtime(p) > os.path.getmtime("/tmp/mark"):
                mod = f.split(".")[0]
                src = os.path.join(os.path.dirname(dp), mod + ".py")
                srcs.append((src, "-pytest-" in f))
t = time.process_time()
n = 0
for s, rw in srcs:
    if os.path.exists(s):
        compile(open(s, "rb").read(), s, "exec"); n += 1
print(len(srcs), "pyc written;", sum(rw for _, rw in srcs), "of them pytest-rewritten test modules; compile cpu-s", round(time.process_time() - t, 3))
for s, rw in srcs[:12]: print("  ", s, "(rewrite)" if rw else "")
