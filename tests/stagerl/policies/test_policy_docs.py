"""docs/write_a_policy.md: its Python examples run as written, one namespace for the whole page,
and do what the page says."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[3] / "docs" / "write_a_policy.md"


def test_the_python_blocks_run_and_do_what_the_page_says(capsys, monkeypatch):
    monkeypatch.setenv("CI", "1")  # no progress bar in the test log
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert len(blocks) == 4
    namespace: dict = {"__name__": "docs"}
    for block in blocks:
        exec(compile(block, str(DOC), "exec", dont_inherit=True), namespace)
    assert capsys.readouterr().out.splitlines() == [
        "10 1",                                    # CartPole cut at 10 steps: stored truncated
        "[-0.6931472 -0.6931472 -0.6931472]",      # the policy's own trace
        "[66, 64] 60 190",
    ]
    # every transition inserted was learned in exactly one rollout, or waits in the next one
    agent = namespace["agent"]
    assert sum(agent.policy.learned) + agent.trajectory.container.n_sampleable == \
        agent.trajectory.controller.n_inserted
