"""Review rv86: another repository's learned lesson is eligible on a shared dependency
(`retrieve.learned_match`), and a lesson's dependencies include every dependency the project
declares that its error text names (`learn.lesson_context`). The error text is the step's whole
output: an install log names most of the project's dependencies ("Requirement already satisfied:
numpy ..."), so a lesson about one package's build was keyed on numpy and served -- before
planning -- to every project declaring numpy: the leak `learned_match` closed for the build system
reopens through the log."""

from __future__ import annotations

from agents.memory.api import ExperienceMemory, MemoryConfig
from agents.memory.before import proactive
from agents.memory.learn import distil
from agents.memory.repo_context import RepoContext
from agents.models import StepRecord

LOG = ("Collecting frobnicator\n"
       "Requirement already satisfied: numpy>=1.20 in /usr/local/lib/python3.11/site-packages (from astropy)\n"
       "Requirement already satisfied: pyerfa in /usr/local/lib/python3.11/site-packages (from astropy)\n"
       "Building wheel for frobnicator (setup.py): started\n"
       "error: Microsoft Visual C++ 14.0 is required to build the frobnicator\n")


def test_a_dependency_only_the_install_log_names_does_not_key_a_lesson():
    a = RepoContext(ecosystem="python", toolchain="3.11", era=2022, repo="astropy/astropy", build_systems=["pip"],
                    declared={"numpy": "", "pyerfa": ""}, files=["setup.py"])
    b = RepoContext(ecosystem="python", toolchain="3.11", era=2022, repo="sympy/sympy", build_systems=["pip"],
                    declared={"numpy": "", "mpmath": ""}, files=["setup.py"])
    traj = [StepRecord(agent="memory", rule="context", note=a.model_dump_json()),
            StepRecord(agent="execution", rule="recipe:python:0", command="pip install -e .", exit_code=1,
                       output_excerpt=LOG),
            StepRecord(agent="execution", rule="memory:x", command="export X=1", exit_code=0,
                       note="repair: env FROB_NO_EXT=1"),
            StepRecord(agent="execution", rule="recipe:python:0", command="pip install -e .", exit_code=0)]
    mem = ExperienceMemory.open(MemoryConfig(path=None, seed_dir=None))
    distil(traj, "python", "astropy__astropy-1", store=mem.store, repo="astropy/astropy")
    distil(traj, "python", "astropy__astropy-2", store=mem.store, repo="astropy/astropy")
    [e] = [e for e in mem.store.all() if not e.negative and e.provenance.source == "learned"]
    assert "numpy" not in e.context.dependencies, e.context
    hits = [h for h in mem.retrieve(b, k=10) if h.experience.id == e.id]
    assert not (hits and proactive(hits[0], 0.66)), \
        f"astropy's lesson changes sympy's plan before anything failed: {hits[0].why!r}"
