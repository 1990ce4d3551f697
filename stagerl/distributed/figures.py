"""What a :class:`~stagerl.distributed.Learner` reports about its run (``figures()``, what
``summary.json`` records under ``workers``)."""

from __future__ import annotations

import numpy as np

__all__ = ["LearnerFigures"]


class LearnerFigures:
    """The learner's counters and their report (a base of ``Learner``)."""

    def _start_figures(self, workers: int) -> None:
        self.batches = 0
        self.dropped = 0
        self.broadcasts = 0
        self.episodes: list = []  # (return, length) of the workers' finished episodes
        self.seconds = {"waiting": 0.0, "receiving": 0.0, "inserting": 0.0, "learning": 0.0,
                        "broadcasting": 0.0}
        self.worker_steps = [0] * workers
        self.worker_seconds = [0.0] * workers
        # Staleness of the inserted batches (the versions their weights were behind): the
        # largest, the sum, and how often the oldest request went first to keep the bound.
        self._staleness = {"max": 0, "sum": 0, "oldest_first": 0}
        # Gradients (A3C): applied, dropped as too stale, and their staleness.
        self._gradients = {"applied": 0, "dropped": 0, "staleness_max": 0, "staleness_sum": 0}
        self._wall = 0.0

    def _gradient_figures(self, staleness: int, applied: bool) -> None:
        figures = self._gradients
        figures["applied" if applied else "dropped"] += 1
        figures["staleness_max"] = max(figures["staleness_max"], staleness)
        figures["staleness_sum"] += staleness

    def running_figures(self) -> dict:
        """A few figures, cheap to take after every item of the plan."""
        return {"env_steps": self.env_steps, "versions": self.version + self._changed,
                "batches": self.batches, "episodes": len(self.episodes)}

    def figures(self) -> dict:
        """The run's figures so far (what ``summary.json`` records under ``workers``)."""
        wall = self._wall
        per_worker = []
        for slot in range(self.pool.workers):
            steps, seconds = self.worker_steps[slot], self.worker_seconds[slot]
            per_worker.append({"worker": slot, "env_steps": steps,
                               "acting_seconds": seconds,
                               "steps_per_second": steps / seconds if seconds > 0 else 0.0,
                               "incarnations": self.pool.incarnations[slot] + 1})
        returns = [r for r, _ in self.episodes]
        staleness = self._staleness
        out = {
            "workers": self.pool.workers,
            "env_steps": self.env_steps,
            "wall_seconds": wall,
            "steps_per_second": self.env_steps / wall if wall > 0 else 0.0,
            "steps_per_batch": self.steps_per_batch,
            "batches": self.batches,
            "dropped_batches": self.dropped,
            "replaced_workers": self.pool.replaced,
            "versions": self.version + self._changed,
            "weight_broadcasts": self.broadcasts,
            "staleness": {"max": staleness["max"],
                          "mean": staleness["sum"] / self.batches if self.batches else 0.0,
                          "bound": 0 if self.on_policy else self.max_staleness,
                          "oldest_first": staleness["oldest_first"]},
            "episodes": len(self.episodes),
            "last_returns_mean": float(np.mean(returns[-20:])) if returns else None,
            "seconds": dict(self.seconds),
            "per_worker": per_worker,
            "plan": self.plan.source,
        }
        gradients = self._gradients
        if gradients["applied"] or gradients["dropped"]:
            total = gradients["applied"] + gradients["dropped"]
            out["gradients"] = {"applied": gradients["applied"],
                                "dropped": gradients["dropped"],
                                "staleness_max": gradients["staleness_max"],
                                "staleness_mean": gradients["staleness_sum"] / total}
        return out
