"""benchmarks/template_ab.py without a GPU: both sources rendered, from the older templates and the current
ones, and bad input is one line before any GPU work."""
from __future__ import annotations

import shutil

from gemmgen.base.paths import data_dir
from gemmgen.kernel.config import KernelConfig
from tests.scripts import load

ab = load("template_ab")


def _ws_kernel():
    known = ab.configs()
    return next(n for n, c in known.items() if c.get("mainloop") == "ws_cpasync" and c["split_k"] == 1), known


def test_the_same_templates_give_the_same_source_and_a_changed_one_another(tmp_path):
    name, known = _ws_kernel()
    config = KernelConfig.from_dict(known[name])
    old = tmp_path / "templates"
    shutil.copytree(data_dir("templates"), old)
    same_old, same_new = ab.sources(config, "sm_90", old)
    assert same_old == same_new and name in same_new
    main = old / "ws_cpasync.cu.j2"
    main.write_text(main.read_text().replace("{{ common.header(c, g) }}", "// older\n{{ common.header(c, g) }}", 1))
    changed_old, changed_new = ab.sources(config, "sm_90", old)
    assert changed_new == same_new and "// older" in changed_old and "// older" not in changed_new


def test_bad_input_is_one_line(tmp_path, capsys):
    name, _ = _ws_kernel()
    templates = str(data_dir("templates"))
    older = tmp_path / "older"   # templates from before one top-level template per schedule
    shutil.copytree(data_dir("templates"), older)
    (older / "ws_cpasync.cu.j2").unlink()
    cases = [(["--old", str(tmp_path), f"{name}@64x64x64"], "holds no templates"),
             (["--old", templates, "gg_no_such_kernel@64x64x64"], "unknown kernel"),
             (["--old", str(older), f"{name}@64x64x64"], "has no ws_cpasync.cu.j2"),
             (["--old", templates, f"{name}@64x0x64"], "bad shape"),
             (["--old", templates, "--rounds", "0", f"{name}@64x64x64"], "--rounds 0"),
             (["--old", templates, "--json", str(tmp_path / "no" / "x.json"), f"{name}@64x64x64"], "folder does not exist")]
    for argv, words in cases:
        assert ab.main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert words in err and "\n" not in err and "Traceback" not in err, (argv, err)
