"""Issue 25's JavaScript classes without Docker: a test_patch that changes only data the tests
read (a Jest snapshot, a fixture or baseline a test file names) selects the test files that
read it, and a runner the project starts through Node with flags of its own is started the same
way, not called bare. The Docker twins are in test_node_moves_docker.py."""

from __future__ import annotations

from agents.ecosystems.node import analyze, build_plan
from agents.ecosystems.node.runner import data_test_files, runner_launcher, snapshot_test_files
from tests.agents.ecosystems.test_node import JEST_LIMIT, FakeTree, choice, inst, pkg

JEST = {"scripts": {"test": "jest"}, "devDependencies": {"jest": "^29"}}


def test_a_snapshot_only_test_patch_runs_the_test_file_the_snapshot_is_named_after():
    tree = FakeTree({"package.json": pkg(**JEST), "src/__tests__/fmt.test.js": "", "src/fmt.js": ""})
    touched = ["src/__tests__/__snapshots__/fmt.test.js.snap"]
    assert snapshot_test_files(tree, touched) == ["src/__tests__/fmt.test.js"]
    a = analyze(tree, inst(), touched)
    assert a.test_files == ["src/__tests__/fmt.test.js"]
    assert "--runTestsByPath src/__tests__/fmt.test.js" in build_plan(a, choice()).test_command
    # a snapshot of a test file that exists nowhere names no test
    assert snapshot_test_files(tree, ["src/__tests__/__snapshots__/gone.test.js.snap"]) == []
    # a test file the test_patch adds with its snapshot
    assert snapshot_test_files(tree, ["a/__snapshots__/n.test.ts.snap", "a/n.test.ts"]) == ["a/n.test.ts"]


def test_a_snapshot_beside_a_touched_test_adds_its_own_test_file_once():
    tree = FakeTree({"package.json": pkg(**JEST), "t/a.test.js": "", "t/b.test.js": ""})
    a = analyze(tree, inst(), ["t/a.test.js", "t/__snapshots__/a.test.js.snap", "t/__snapshots__/b.test.js.snap"])
    assert a.test_files == ["t/a.test.js", "t/b.test.js"]


def test_a_touched_baseline_runs_the_test_files_of_its_package_that_name_it():
    tree = FakeTree({"package.json": pkg(private=True, workspaces=["packages/*"], **JEST),
                     "packages/p/package.json": pkg(),
                     "packages/p/test/render.test.js": "const want = read('render.approved.txt');\n",
                     "packages/p/test/other.test.js": "expect(1).toBe(1);\n",
                     "packages/q/test/render.test.js": "read('render.approved.txt')\n",
                     "packages/p/test/render.approved.txt": "old\n"})
    touched = ["packages/p/test/render.approved.txt"]
    assert data_test_files(tree, touched) == [("packages/p/test/render.test.js", "packages/p/test/render.approved.txt")]
    assert analyze(tree, inst(), touched).test_files == ["packages/p/test/render.test.js"]


def test_jest_started_through_node_flags_by_the_test_script_is_started_the_same_way():
    """An ES-module project: `node --experimental-vm-modules node_modules/jest/bin/jest.js`;
    bare `jest` fails every suite with "Cannot use import statement outside a module"."""
    script = "node --experimental-vm-modules --no-warnings node_modules/jest/bin/jest.js --coverage"
    assert runner_launcher(script, "jest") == ["node", "--experimental-vm-modules", "--no-warnings",
                                               "node_modules/jest/bin/jest.js"]
    tree = FakeTree({"package.json": pkg(type="module", scripts={"test": script}, devDependencies={"jest": "^29"}),
                     "test/sum.test.js": ""})
    a = analyze(tree, inst(), ["test/sum.test.js"])
    cmd = build_plan(a, choice()).test_command
    assert f"node --experimental-vm-modules --no-warnings node_modules/jest/bin/jest.js {JEST_LIMIT} --json --outputFile=" in cmd
    # bare runners, env-var flags and other wrappers keep today's command
    assert runner_launcher("jest --ci", "jest") == []
    assert runner_launcher("NODE_OPTIONS=--experimental-vm-modules jest", "jest") == []
    assert runner_launcher("node bin/ssl_hotfix.js mocha test", "mocha") == []
    assert runner_launcher("node --flag ../outside/jest.js", "jest") == []
    assert runner_launcher("node --x=$(evil) node_modules/jest/bin/jest.js", "jest") == []


def test_a_stalled_jest_round_gets_the_projects_own_test_script_as_a_move():
    from agents.ecosystems.move_types import MoveContext
    from agents.ecosystems.node import ECOSYSTEM

    tree = FakeTree({"package.json": pkg(scripts={"test": "cross-env TZ=UTC jest --runInBand"},
                                         devDependencies={"jest": "^29", "cross-env": "^7"}), "test/a.test.js": ""})
    plan = build_plan(analyze(tree, inst(), ["test/a.test.js"]), choice())
    ctx = MoveContext(tree=tree, instance=None, plan=plan, touched=["test/a.test.js"], why="no test ran: x",
                      tried=[plan.test_spec()])
    moves = ECOSYSTEM.next_moves(ctx)
    assert [m.kind for m in moves] == ["ci_command"]
    assert f"npm run test -- {JEST_LIMIT} --json --outputFile=" in moves[0].test.test_command
    assert "--runTestsByPath test/a.test.js" in moves[0].test.test_command
    ctx.tried.append(moves[0].test)
    assert ECOSYSTEM.next_moves(ctx) == []
    tree = FakeTree({"package.json": pkg(devDependencies={"jest": "^29"}), "test/a.test.js": ""})  # no script
    plan = build_plan(analyze(tree, inst(), ["test/a.test.js"]), choice())
    assert ECOSYSTEM.next_moves(MoveContext(tree=tree, instance=None, plan=plan, touched=[], why="x")) == []
