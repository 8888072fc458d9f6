"""Print the mutation score of the last `mutmut run` (make mutation): killed of all mutants, and
what the rest were, from the summary mutmut writes with `mutmut export-cicd-stats`."""
from __future__ import annotations

import json
import sys
from pathlib import Path


def score_line(stats: dict) -> str:
    """One line: killed (timeouts count as killed, as in mutmut's own score) of every mutant."""
    total = int(stats["total"]) - int(stats.get("skipped", 0))
    killed = int(stats["killed"]) + int(stats.get("timeout", 0))
    share = killed / total if total else float("nan")
    return (f"mutation score: {killed} of {total} mutants killed ({share:.1%}); {stats['survived']} survived, "
            f"{stats['no_tests']} reached by no selected test, {stats.get('suspicious', 0)} suspicious")


def main(argv: list[str]) -> int:
    path = Path(argv[0] if argv else "mutants/mutmut-cicd-stats.json")
    print(score_line(json.loads(path.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
