"""The README's Python examples run as written, one namespace for the whole file."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert len(blocks) >= 3
    namespace: dict = {"__name__": "readme"}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    printed = capsys.readouterr().out
    assert "episodes, mean return" in printed
    assert namespace["summary"]["eval_return_mean"] >= 475  # the quickstart's PPO learned
    # The tabular agent learned RandomWalk1D: late episodes end on the right (+1) nearly always.
    assert namespace["np"].mean(namespace["hook"].rewards[-50:]) > 0.8
