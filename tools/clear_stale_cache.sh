#!/usr/bin/env bash
# Drop the book's jupyter-cache when the code it ran against has changed.
#
# jupyter-cache (execute_notebooks: cache in _config.yml) keys each notebook on the source of its
# code cells only, so an edit in lowrank/ would otherwise leave stale outputs in the book. The
# fingerprint covers every lowrank/**/*.py (path and content), requirements/lock.txt (a new
# torch or numpy changes numbers too), the committed results stores under data/results/ (a
# chapter that reads a stored sweep changes with it), the chapters' evidence files (chapter 08
# and the landing page read them) and the rules ledger (the verdicts' notes show its events);
# it is kept in <cache>/lowrank.sha256.
#
# Sphinx re-reads only source files that changed, and myst-nb executes a notebook only while
# reading it, so clearing the cache alone would leave the old pages in place. The Sphinx
# environment next to the cache (<cache>/../.doctrees) goes too, and the next build re-reads and
# re-executes every chapter.
#
# A damaged cache (a database that is not SQLite or lacks its tables, a cached notebook that is
# missing or not JSON: an interrupted build, a full disk) is detected by reading every record
# through jupyter-cache itself, and cleared the same way, so the build re-executes instead of
# failing with a traceback from inside jupyter-cache.
#
# usage: tools/clear_stale_cache.sh [CACHE_DIR]     (default: _build/.jupyter_cache)
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${1:-_build/.jupyter_cache}
doctrees=$(dirname "$cache")/.doctrees
stamp=$cache/lowrank.sha256

fingerprint=$(
  {
    find lowrank -type f -name '*.py' -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
    sha256sum requirements/lock.txt
    for dir in data/results chapters/evidence; do
      if [[ -d $dir ]]; then
        find "$dir" -maxdepth 1 -type f \( -name '*.jsonl' -o -name '*.json' \) -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
      fi
    done
    if [[ -f data/rules_ledger.jsonl ]]; then
      sha256sum data/rules_ledger.jsonl
    fi
  } | sha256sum | cut -d' ' -f1
)

python=${PYTHON:-.venv/bin/python}
[[ -x $python ]] || python=python3
damage=""
if [[ -e $cache/global.db ]]; then
  damage=$("$python" - "$cache" <<'PY' 2>/dev/null || true
import sys

try:
    from jupyter_cache import get_cache

    cache = get_cache(sys.argv[1])
    for record in cache.list_cache_records():
        cache.get_cache_bundle(record.pk)
    cache.list_project_records()
except ImportError:
    pass  # no jupyter-cache here: nothing to check it with
except Exception as e:  # any failure to read it back is damage
    print(f"{type(e).__name__}: {' '.join(str(e).split())[:160]}")
PY
  )
fi
if [[ -n $damage ]]; then
  echo "the book's cache $cache is damaged ($damage): clearing it and $doctrees"
  rm -rf "$cache" "$doctrees"
  mkdir -p "$cache"
  echo "$fingerprint" > "$stamp"
elif [[ "$(cat "$stamp" 2>/dev/null || true)" != "$fingerprint" ]]; then
  if [[ -e $cache || -e $doctrees ]]; then
    echo "lowrank/, the lock file, the stored results, the evidence files or the ledger changed since the last build: clearing $cache and $doctrees"
  fi
  rm -rf "$cache" "$doctrees"
  mkdir -p "$cache"
  echo "$fingerprint" > "$stamp"
fi
