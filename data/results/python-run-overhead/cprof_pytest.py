import cProfile, sys, time, runpy
sys.argv = ["pytest"] + sys.argv[1:]
p = cProfile.Profile(time.process_time)
rc = 0
try:
    p.runcall(runpy.run_module, "pytest", run_name="__main__", alter_sys=True)
except SystemExit as e:
    rc = e.code
finally:
    p.dump_stats("/tmp/prof.out")
sys.exit(rc)
