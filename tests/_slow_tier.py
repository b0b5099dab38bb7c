"""Which test functions belong in the slow tier, read from a pytest durations report.

    python -m pytest -q -n 2 -m "" --durations=0 > durations.txt
    python tests/_slow_tier.py durations.txt [--seconds 4]

A test function's time is the sum of its runs (every parameter; set-up, call and teardown). Prints
the functions of the suite (not marked slow) at or over ``--seconds``, which belong in the slow
tier, and the slow-tier functions under a quarter of it, which may come back. Marks are read from
the source (``@pytest.mark.slow`` directly above the ``def`` or among its decorators).
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

LINE = re.compile(r"^(\d+(?:\.\d+)?)s (?:setup|call|teardown)\s+(\S+?)(?:\[.*\])?$")
REPO = Path(__file__).resolve().parents[1]


def function_seconds(report: str) -> dict[str, float]:
    """Seconds per ``file::function`` in a ``--durations`` report."""
    seconds: dict[str, float] = defaultdict(float)
    for line in report.splitlines():
        m = LINE.match(line.strip())
        if m:
            seconds[m.group(2)] += float(m.group(1))
    return dict(seconds)


def marked_slow(node: str) -> bool:
    """Whether ``file::function`` carries ``@pytest.mark.slow`` in its decorators."""
    path, name = node.split("::")[0], node.split("::")[-1]
    lines = (REPO / path).read_text().splitlines()
    for i, line in enumerate(lines):
        if re.match(rf"\s*def {re.escape(name)}\(", line):
            j = i - 1
            while j >= 0 and not re.match(r"\s*(def |class |$)", lines[j]):
                if "pytest.mark.slow" in lines[j]:
                    return True
                j -= 1
            return False
    return False


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args(argv)
    seconds = function_seconds(args.report.read_text())
    for node, s in sorted(seconds.items(), key=lambda kv: -kv[1]):
        slow = marked_slow(node)
        if not slow and s >= args.seconds:
            print(f"to the slow tier: {s:6.2f} s {node}")
        elif slow and s < args.seconds / 4:
            print(f"may come back:    {s:6.2f} s {node}")


if __name__ == "__main__":
    main()
