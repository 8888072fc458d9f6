"""Insert cells into a notebook after the first cell whose source contains a marker (a helper for
editing chapters as JSON; the text twins are refreshed afterwards by tools/sync_sources.py).

    python tools/insert_cells.py NOTEBOOK MARKER CELLS.py

CELLS.py holds the new cells in jupytext's percent format (``# %%`` code, ``# %% [markdown]``
markdown, optional ``tags=[...]`` after the marker)."""
from __future__ import annotations

import json
import re
import sys
import uuid
from pathlib import Path


def parse_cells(text: str) -> list[dict]:
    cells = []
    for block in re.split(r"^(?=# %%)", text, flags=re.M):
        if not block.strip():
            continue
        head, _, body = block.partition("\n")
        tags = re.findall(r'"([^"]+)"', head.split("tags=", 1)[1]) if "tags=" in head else []
        ident = uuid.uuid4().hex[:8]
        if "[markdown]" in head:
            lines = [re.sub(r"^# ?", "", line) for line in body.rstrip("\n").split("\n")]
            cell = {"cell_type": "markdown", "id": ident, "metadata": {}, "source": lines}
        else:
            cell = {"cell_type": "code", "execution_count": None, "id": ident, "metadata": {}, "outputs": [],
                    "source": body.rstrip("\n").split("\n")}
        if tags:
            cell["metadata"]["tags"] = tags
        src = cell["source"]
        cell["source"] = [line + "\n" for line in src[:-1]] + [src[-1]] if src else []
        cells.append(cell)
    return cells


def main(argv: list[str]) -> int:
    path, marker, cells_file = Path(argv[0]), argv[1], Path(argv[2])
    nb = json.loads(path.read_text())
    at = next((i for i, c in enumerate(nb["cells"]) if marker in "".join(c["source"])), None)
    if at is None:
        print(f"marker {marker!r} not found in {path}", file=sys.stderr)
        return 2
    nb["cells"][at + 1:at + 1] = parse_cells(cells_file.read_text())
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
