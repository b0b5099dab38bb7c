"""Mutation testing of one module against chosen tests, with Cosmic Ray, in a throw-away copy.

What it is: a developer's tool, not a table of the papers (hence the leading underscore: the
experiments smoke test skips it). It answers "would these tests notice if this module were
wrong?": Cosmic Ray (``pip install -e ".[dev]"``) makes small changes ("mutants") to MODULE_PATH
one at a time -- ``+`` for ``-``, ``<`` for ``<=``, ``True`` for ``False``, a number plus one, a
decorator removed, ... -- and runs ::

    python -m pytest -x -q -p no:cacheprovider -n 0 -m "" TEST_PATH [TEST_PATH ...]

against each (``-m ""``: the slow tier's tests too). A mutant is *killed* when the tests fail
(or the module no longer imports), it *times out* past ``--timeout-factor`` times the unmutated
run, and it *survives* when every test still passes: a survivor is either an equivalent change
(behaviour cannot differ) or a gap in the tests. The script prints ::

    MODULE: killed K of N mutants (P %), survived S, timeout T

(P = 100 K / N; N counts every mutant that was run) and every survivor as ``file:line`` with its
diff, so that the missing test can be written.

Everything happens in a temporary folder holding a copy of the repository's ``mlgp/``, ``tests/``,
``setup.cfg`` and ``pyproject.toml`` (no ``__pycache__``): the tests import ``mlgp`` from the copy
(``PYTHONPATH`` and the working directory point at it; this is checked before the run), Cosmic Ray
mutates only the copy, its session database lives there, and the folder is removed at the end.
Nothing is written into the repository. The test command gets ``MLGP_DATA`` (default
``../shared/data`` beside the checkout when unset), ``OPENBLAS_NUM_THREADS=1``,
``TF_ENABLE_ONEDNN_OPTS=0`` and ``PYTHONDONTWRITEBYTECODE=1``.

Usage (from the repository root)::

    python experiments/_mutation.py mlgp/estimator/budget.py tests/geneml/test_budget.py
    python experiments/_mutation.py mlgp/families.py tests/comparison/test_families.py --quick

``--quick`` runs only the first 10 mutants in source order (a smoke run of the set-up).
``--sample N`` runs N mutants drawn at random (``--seed``) and reports the score as an estimate of
the whole module's with its 95 % Wilson interval. Mutants run one after another; expect roughly
(number of mutants) x (seconds of one test run).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _mutation_select import drop_annotation_mutants, keep_first, wilson_interval  # beside this script

REPO = Path(__file__).resolve().parents[1]
#: what is copied into the temporary tree
COPIED = ("mlgp", "tests", "setup.cfg", "pyproject.toml")
QUICK_MUTANTS = 10


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python experiments/_mutation.py",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Cosmic Ray comes with the dev extra: pip install -e \".[dev]\".")
    parser.add_argument("module", metavar="MODULE_PATH", help="the module to mutate, e.g. mlgp/families.py")
    parser.add_argument("tests", metavar="TEST_PATH", nargs="+",
                        help="test files (or pytest node ids) that should kill the mutants")
    parser.add_argument("--quick", action="store_true",
                        help=f"run only the first {QUICK_MUTANTS} mutants in source order (a smoke run)")
    parser.add_argument("--sample", type=_positive_int, metavar="N",
                        help="run N mutants drawn at random and report an estimate with its 95 %% interval")
    parser.add_argument("--seed", type=int, default=0, help="the seed of --sample's draw (default 0)")
    parser.add_argument("--timeout-factor", type=float, default=3.0,
                        help="a mutant whose tests run longer than this many times the unmutated run (at "
                             "least 60 s more) counts as timed out (default 3)")
    parser.add_argument("--show-killed", action="store_true", help="list the killed mutants too")
    args = parser.parse_args(argv)
    if args.quick and args.sample:
        parser.error("--quick and --sample exclude each other")
    return args


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value




def _repo_relative(path: str, must_be_under: str) -> str:
    """``path`` (absolute or relative to the current folder or the repository) as a POSIX path
    relative to the repository, checked to exist under ``must_be_under``."""
    file_part, sep, node = path.partition("::")
    candidates = [Path(file_part)] if Path(file_part).is_absolute() else [Path.cwd() / file_part, REPO / file_part]
    for candidate in candidates:
        if candidate.exists():
            rel = candidate.resolve().relative_to(REPO) if candidate.resolve().is_relative_to(REPO) else None
            if rel is None or rel.parts[0] != must_be_under:
                raise SystemExit(f"error: {path} is not under the repository's {must_be_under}/")
            return rel.as_posix() + sep + node
    raise SystemExit(f"error: {path} does not exist")


def _cosmic_ray() -> list[str]:
    try:
        import cosmic_ray  # noqa: F401
    except ImportError:
        raise SystemExit('error: Cosmic Ray is not installed; pip install -e ".[dev]"') from None
    script = Path(sys.executable).parent / "cosmic-ray"
    return [str(script)] if script.exists() else [sys.executable, "-c", "from cosmic_ray.cli import main; main()"]


def _copy_tree(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".hypothesis")
    for name in COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=ignore)
        elif source.exists():
            shutil.copy2(source, dest / name)


def _environment(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("MLGP_DATA", str(REPO.parent / "shared" / "data"))
    env.update(OPENBLAS_NUM_THREADS="1", TF_ENABLE_ONEDNN_OPTS="0", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([str(tree)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]))
    env.pop("PYTEST_ADDOPTS", None)
    return env


def _run(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float | None = None,
         tick=None) -> subprocess.CompletedProcess:
    """``cmd`` in its own process group (output captured), killed as a group on a time-out or an
    interrupt; ``tick()`` is called every 30 s while it runs."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, start_new_session=True, text=True, errors="replace",
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            wait = 30.0 if deadline is None else min(30.0, max(deadline - time.monotonic(), 0.0))
            try:
                out, _ = proc.communicate(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                if deadline is not None and time.monotonic() >= deadline:
                    raise
                if tick is not None:
                    tick()
    except BaseException:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.communicate()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, None)


def _stop_leftovers(folder: Path) -> None:
    """Kill what still runs in ``folder`` after an interrupt: Cosmic Ray starts each test run in a
    session of its own, which killing Cosmic Ray leaves running."""
    import psutil

    mine = []
    for proc in psutil.process_iter(["pid", "cwd"]):
        cwd = proc.info.get("cwd")
        if proc.pid != os.getpid() and cwd and Path(cwd).is_relative_to(folder):
            mine.append(proc)
    for proc in mine:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(mine, timeout=30)


def _check_imports_the_copy(tree: Path, env: dict[str, str], module: str) -> None:
    """The tests must import the mutated copy, not the repository (an editable install points there)."""
    dotted = module.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
    code = f"import importlib.util as u; print(u.find_spec({dotted!r}).origin)"
    origin = _run([sys.executable, "-c", code], cwd=tree, env=env, timeout=300).stdout.strip().splitlines()[-1]
    if Path(origin).resolve() != (tree / module).resolve():
        raise SystemExit(f"error: in the copy, {dotted} is imported from {origin}, not from {tree / module}")


def _write_config(path: Path, module: str, test_command: str, timeout: float) -> None:
    import toml

    path.write_text(toml.dumps({"cosmic-ray": {
        "module-path": module, "timeout": float(timeout), "excluded-modules": [],
        "test-command": test_command, "distributor": {"name": "local"}}}))






class _Progress:
    """Prints how many mutants are done, when that changed (read from the session while it runs)."""

    def __init__(self, session: Path, total: int, start: float) -> None:
        self.session, self.total, self.start, self.done = session, total, start, 0

    def __call__(self) -> None:
        from cosmic_ray.work_db import WorkDB, use_db

        try:
            with use_db(str(self.session), WorkDB.Mode.open) as db:
                done = db.num_results
        except Exception:  # the database is busy being written: try at the next tick
            return
        if done != self.done:
            self.done = done
            print(f"  {done} of {self.total} mutants done ({(time.perf_counter() - self.start) / 60:.1f} min)",
                  flush=True)


def _results(cosmic_ray: list[str], session: Path, tree: Path, env: dict[str, str]) -> list[tuple[dict, dict | None]]:
    out = _run(cosmic_ray + ["dump", str(session)], cwd=tree, env=env)
    if out.returncode != 0:
        raise SystemExit(f"error: cosmic-ray dump failed:\n{out.stdout}")
    return [tuple(json.loads(line)) for line in out.stdout.splitlines() if line.startswith("[")]


def _position(item: dict) -> tuple:
    m = item["mutations"][0]
    return (m["module_path"], tuple(m["start_pos"]), m["operator_name"], m["occurrence"])


def _describe(item: dict, result: dict) -> str:
    m = item["mutations"][0]
    line, col = m["start_pos"]
    where = f"{m['module_path']}:{line}" + (f" (in {m['definition_name']})" if m.get("definition_name") else "")
    diff = "\n".join("    " + row for row in (result.get("diff") or "").splitlines()
                     if not row.startswith(("---", "+++")))
    return f"{where}  [{m['operator_name'].removeprefix('core/')} #{m['occurrence']}]\n{diff}"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    module = _repo_relative(args.module, "mlgp")
    if not module.endswith(".py") or "::" in module:
        raise SystemExit(f"error: MODULE_PATH must be one .py file, got {args.module}")
    tests = [_repo_relative(t, "tests") for t in args.tests]
    cosmic_ray = _cosmic_ray()
    test_command = shlex.join([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-n", "0", "-m", "",
                               *tests])

    def terminated(signum, frame):
        raise SystemExit(128 + signum)

    # Ctrl-C raises KeyboardInterrupt; a kill (SIGTERM) too must clean up: stop the test runs and
    # remove the temporary folder.
    signal.signal(signal.SIGTERM, terminated)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # started in the background by a shell
        signal.signal(signal.SIGINT, signal.default_int_handler)
    with tempfile.TemporaryDirectory(prefix="mlgp-mutation-") as tmp:
        try:
            results = _mutate(Path(tmp), args, module, tests, cosmic_ray, test_command)
        finally:
            _stop_leftovers(Path(tmp))
    _report(args, module, results)
    return 0


def _mutate(tmp: Path, args: argparse.Namespace, module: str, tests: list[str], cosmic_ray: list[str],
            test_command: str) -> list:
    """Copy, check, run the baseline and the mutants in ``tmp``; the completed results, in source order."""
    tree = Path(tmp) / "tree"
    tree.mkdir()
    _copy_tree(tree)
    env = _environment(tree)
    _check_imports_the_copy(tree, env, module)
    print(f"copy of the repository: {tree}\ntest command: {test_command}", flush=True)

    start = time.perf_counter()
    baseline = _run(shlex.split(test_command), cwd=tree, env=env)
    seconds = time.perf_counter() - start
    if baseline.returncode != 0:
        print(baseline.stdout[-5000:])
        raise SystemExit(f"error: the tests fail without any mutation (exit {baseline.returncode}); fix them first")
    timeout = max(args.timeout_factor * seconds, seconds + 60)
    print(f"unmutated run: passed in {seconds:.1f} s; time-out per mutant {timeout:.0f} s", flush=True)

    config, session = Path(tmp) / "cosmic-ray.toml", Path(tmp) / "session.sqlite"
    _write_config(config, module, test_command, timeout)
    init = _run(cosmic_ray + ["init", str(config), str(session)], cwd=tree, env=env)
    if init.returncode != 0:
        raise SystemExit(f"error: cosmic-ray init failed:\n{init.stdout}")
    dropped = drop_annotation_mutants(session, tree / module)
    if dropped:
        print(f"{dropped} mutants inside annotations left out (the module postpones their evaluation, "
              "so none can change behaviour)", flush=True)
    if args.quick:
        total = keep_first(session, QUICK_MUTANTS)
        print(f"--quick: the first {min(QUICK_MUTANTS, total)} of {total} mutants", flush=True)
    elif args.sample:
        total = keep_first(session, args.sample, seed=args.seed)
        args.population = total
        print(f"--sample: {min(args.sample, total)} of {total} mutants drawn at random (seed {args.seed})", flush=True)
    pending = sum(r is None for _, r in _results(cosmic_ray, session, tree, env))
    print(f"running {pending} mutants (about {pending * seconds / 60:.0f} min at most)", flush=True)

    start = time.perf_counter()
    progress = _Progress(session, pending, start)
    run = _run(cosmic_ray + ["exec", str(config), str(session)], cwd=tree, env=env, tick=progress)
    if run.returncode != 0:
        raise SystemExit(f"error: cosmic-ray exec failed:\n{run.stdout[-5000:]}")
    print(f"mutants ran in {(time.perf_counter() - start) / 60:.1f} min", flush=True)
    results = sorted(((i, r) for i, r in _results(cosmic_ray, session, tree, env)
                      if r is not None and r["worker_outcome"] not in ("no-test", "skipped")),
                     key=lambda ir: _position(ir[0]))
    return results


def _report(args: argparse.Namespace, module: str, results: list) -> None:
    killed = [(i, r) for i, r in results if r["test_outcome"] == "killed" and r["output"] != "timeout"]
    timeouts = [(i, r) for i, r in results if r["test_outcome"] == "killed" and r["output"] == "timeout"]
    survived = [(i, r) for i, r in results if r["test_outcome"] == "survived"]
    other = [(i, r) for i, r in results if (i, r) not in killed + timeouts + survived]
    n = len(results)
    if args.show_killed:
        print(f"\nkilled mutants ({len(killed)}):")
        for item, result in killed:
            print(_describe(item, result))
    if other:
        print(f"\nmutants the tool could not test ({len(other)}; not counted as killed):")
        for item, result in other:
            print(_describe(item, result) + "\n    " + (result.get("output") or "")[-500:].replace("\n", "\n    "))
    if survived:
        print(f"\nsurviving mutants ({len(survived)}):")
        for item, result in survived:
            print(_describe(item, result))
    percent = 100.0 * len(killed) / n if n else 0.0
    print(f"\n{module}: killed {len(killed)} of {n} mutants ({percent:.1f} %), survived {len(survived)}, "
          f"timeout {len(timeouts)}" + (f", untestable {len(other)}" if other else ""))
    if args.sample:
        low, high = wilson_interval(len(killed), n)
        print(f"a random sample of {n} of {getattr(args, 'population', n)} mutants: the module's score is "
              f"{low:.0f}-{high:.0f} % (95 % Wilson interval)")


if __name__ == "__main__":
    sys.exit(main())
