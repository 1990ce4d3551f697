"""The named experiments: one module each, whose name with ``_`` read as ``-`` is the
experiment's name (``dqn_cartpole.py`` is ``dqn-cartpole``) and whose docstring's first line is
its one-line summary. Every module of this package is an experiment: it defines ``EXPERIMENT =
NamedExperiment(Config, make_env, make_agent)``, where ``Config`` derives from the run's
settings and its algorithm's config and overrides only the defaults it changes (see
:mod:`stagerl.experiments.settings`).
"""
