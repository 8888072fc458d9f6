"""An evidence file is UTF-8 whatever the reader's locale, as `make mutation` asks: a file whose
values hold text beyond ASCII (saved by an editor or another tool, which need not escape it as the
book's writer does) reads the same under a C locale, whose default codec is ASCII."""
import json
import locale

from lowrank.experiments import evidence as E


def test_an_evidence_file_is_read_as_utf8_under_any_locale(tmp_path):
    path = tmp_path / "05_rank_barrier.json"
    data = {"format": E.FORMAT, "stem": "05_rank_barrier", "scale": "default",
            "values": {"ch05_arms": "d_h = 2 – d_p = 16 ×2", "ch05_name": "Müller"}, "verdicts": {}, "params": {},
            "stores": []}
    path.write_bytes(json.dumps(data, ensure_ascii=False).encode("utf8"))
    before = locale.setlocale(locale.LC_CTYPE)
    try:
        locale.setlocale(locale.LC_CTYPE, "C")
        found = E.read_evidence(path)
    finally:
        locale.setlocale(locale.LC_CTYPE, before)
    assert found.values == {"ch05_arms": "d_h = 2 – d_p = 16 ×2", "ch05_name": "Müller"} and found.chapter == "05"
