import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Pretend to be a Jupyter kernel (the check tqdm.autonotebook makes) and record warnings.
CODE = """
import sys, types, warnings
fake = types.ModuleType("IPython")
class ZMQInteractiveShell:
    pass
fake.get_ipython = lambda: ZMQInteractiveShell()
sys.modules["IPython"] = fake
sys.modules["ipykernel.zmqshell"] = types.ModuleType("ipykernel.zmqshell")
sys.modules["ipywidgets"] = None  # as in a kernel without widgets
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    import {module}
    from {module} import tqdm
print(len([w for w in seen if "IProgress" in str(w.message)]), sum(tqdm(range(3), disable=True)))
"""


def _run(module):
    done = subprocess.run([sys.executable, "-c", CODE.replace("{module}", module)], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_progress_bar_import_is_silent_in_a_kernel_without_widgets():
    assert _run("tqdm.auto") == ["1", "3"]  # the warning the module exists to filter
    assert _run("lowrank.core.progress") == ["0", "3"]
